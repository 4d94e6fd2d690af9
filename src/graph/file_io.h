#pragma once
// Reading a user's file safely: it must be a regular file (a FIFO would block forever, a device
// such as /dev/zero never ends) of at most `max_bytes`; every error names the file.
#include <cstdint>
#include <string>

namespace ts {

inline constexpr uint64_t kMaxInputFileBytes = uint64_t{2} << 30;  // protobuf's own 2 GiB message limit

// The whole file. Throws Error "<path>: no such file" / "is a directory" / "is not a regular
// file (a FIFO, device or socket)" / "is N bytes, more than the M a <what> may have" / "cannot open".
std::string read_regular_file(const std::string& path, const std::string& what,
                              uint64_t max_bytes = kMaxInputFileBytes);

// `length` bytes from `offset` of a regular file, with the same checks; a range past the end is
// an Error "<path>: holds N bytes; <what> needs bytes A..B".
std::string read_file_range(const std::string& path, const std::string& what, uint64_t offset, uint64_t length);

}  // namespace ts
