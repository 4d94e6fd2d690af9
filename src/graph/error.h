#pragma once
// Error types shared by every part of tensorsched. Messages name the file, node, op or stage
// and the reason; the CLI prints them on one line and exits non-zero.
#include <stdexcept>
#include <string>

namespace ts {

// Any failure the user can act on (bad file, bad flag, bad model).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The model is valid ONNX but uses an op, attribute value or dtype tensorsched does not lower.
struct Unsupported : Error {
  using Error::Error;
};

// A name from a user's file as it may appear in a message: control characters (terminal escapes)
// become '?'.
inline std::string printable_name(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

}  // namespace ts
