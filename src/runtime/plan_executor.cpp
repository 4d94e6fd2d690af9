#include "runtime/plan_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "graph/block_copy.h"

namespace ts::plan {

namespace {


std::string escape(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (c <= ' ' || c == '%' || c >= 0x7f) out += {'%', hex[c >> 4], hex[c & 15]};
    else out += static_cast<char>(c);
  }
  return out.empty() ? "%" : out;  // "%" alone: the empty string
}

std::string unescape(const std::string& s) {
  if (s == "%") return "";
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    auto digit = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      throw std::runtime_error("model plan: bad escape in '" + s + "'");
    };
    if (i + 2 >= s.size()) digit('?');
    out += static_cast<char>(digit(s[i + 1]) * 16 + digit(s[i + 2]));
    i += 2;
  }
  return out;
}

// Reads whitespace-separated fields of one line; errors name the line.
struct LineReader {
  std::istringstream in;
  size_t line;
  template <typename T> T next(const char* what) {
    T v;
    if (!(in >> v)) throw std::runtime_error("model plan, line " + std::to_string(line) + ": expected " + what);
    return v;
  }
  std::string name(const char* what) { return unescape(next<std::string>(what)); }
};

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error("model plan: " + why); }

// The buffer whose storage `b` lies in (itself unless a view), and b's byte offset inside it.
int root_of(const Plan& p, int b, uint64_t* offset = nullptr) {
  uint64_t at = 0;
  for (; p.buffers[b].view_of >= 0; b = p.buffers[b].view_of) at += p.buffers[b].view_offset;
  if (offset) *offset = at;
  return b;
}

uint64_t aligned(uint64_t n) { return (n + kActivationAlign - 1) / kActivationAlign * kActivationAlign; }

}  // namespace

std::vector<uint64_t> plan_arena(const Plan& p, uint64_t& arena_bytes) {
  const int nb = static_cast<int>(p.buffers.size());
  const int end = static_cast<int>(p.steps.size());  // outputs are read after the last step
  std::vector<int> first(nb, -1), last(nb, -1);      // live range of each root activation
  auto touch = [&](int b, int step) {
    const int r = root_of(p, b);
    if (p.buffers[r].role != Role::Activation) return;
    if (first[r] < 0) first[r] = step;
    last[r] = std::max(last[r], step);
  };
  for (int s = 0; s < end; s++) {
    for (int a : p.steps[s].args) touch(a, s);
    for (const Pack& k : p.steps[s].packs) touch(k.from, s), touch(k.to, s);
  }
  for (int o : p.outputs) touch(o, end);
  std::vector<int> order;
  for (int b = 0; b < nb; b++)
    if (p.buffers[b].role == Role::Activation && p.buffers[b].view_of < 0) {
      if (first[b] < 0) first[b] = last[b] = end;  // touched by nothing: still gets bytes
      order.push_back(b);
    }
  // Largest first, each at the lowest offset clear of every placed buffer live at the same time.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p.buffers[a].bytes() > p.buffers[b].bytes(); });
  std::vector<uint64_t> offset(nb, 0);
  std::vector<int> placed;
  arena_bytes = 0;
  for (int b : order) {
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of placed buffers live with b
    for (int q : placed)
      if (first[q] <= last[b] && first[b] <= last[q]) busy.emplace_back(offset[q], offset[q] + aligned(p.buffers[q].bytes()));
    std::sort(busy.begin(), busy.end());
    const uint64_t size = aligned(p.buffers[b].bytes());
    uint64_t at = 0;
    for (const auto& [lo, hi] : busy) {
      if (at + size <= lo) break;
      at = std::max(at, hi);
    }
    offset[b] = at;
    arena_bytes = std::max(arena_bytes, at + size);
    placed.push_back(b);
  }
  return offset;
}

int64_t Buffer::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string serialize(const Plan& p) {
  std::ostringstream out;
  out << "tensorsched-plan 2\n";
  out << "constant_bytes " << p.constant_bytes << "\n";
  for (const auto& f : p.functions) out << "function " << escape(f) << "\n";
  for (const auto& b : p.buffers) {
    out << "buffer " << escape(b.name) << " " << int(b.role) << " " << int(b.type_code) << " " << int(b.bits) << " "
        << b.offset << " " << b.shape.size();
    for (int64_t d : b.shape) out << " " << d;
    out << "\n";
  }
  for (size_t b = 0; b < p.buffers.size(); b++)
    if (p.buffers[b].view_of >= 0) out << "view " << b << " " << p.buffers[b].view_of << " " << p.buffers[b].view_offset << "\n";
  for (const auto& s : p.steps) {
    out << "step " << s.function << " " << escape(s.label) << " " << s.args.size();
    for (int a : s.args) out << " " << a;
    out << " " << s.packs.size();
    for (const auto& k : s.packs) out << " " << k.from << " " << k.to << " " << k.axis << " " << k.block;
    out << "\n";
  }
  for (int i : p.inputs) out << "input " << i << "\n";
  for (int o : p.outputs) out << "output " << o << "\n";
  return out.str();
}

Plan parse(const std::string& text) {
  Plan p;
  std::istringstream in(text);
  std::string line;
  size_t n = 0;
  bool header = false;
  while (std::getline(in, line)) {
    n++;
    if (line.empty()) continue;
    LineReader r{std::istringstream(line), n};
    const std::string kind = r.next<std::string>("a record kind");
    if (kind == "tensorsched-plan") {
      const int version = r.next<int>("a version");  // 2 added views; a version-1 plan has none
      if (version != 1 && version != 2) fail("line " + std::to_string(n) + ": unsupported plan version");
      header = true;
    } else if (!header) {
      fail("line " + std::to_string(n) + ": not a tensorsched plan (no header)");
    } else if (kind == "constant_bytes") {
      p.constant_bytes = r.next<uint64_t>("a byte count");
    } else if (kind == "function") {
      p.functions.push_back(r.name("a symbol"));
    } else if (kind == "buffer") {
      Buffer b;
      b.name = r.name("a name");
      b.role = static_cast<Role>(r.next<int>("a role"));
      b.type_code = static_cast<uint8_t>(r.next<int>("a type code"));
      b.bits = static_cast<uint8_t>(r.next<int>("bits"));
      b.offset = r.next<uint64_t>("an offset");
      b.shape.resize(r.next<size_t>("a rank"));
      for (auto& d : b.shape) d = r.next<int64_t>("a dimension");
      p.buffers.push_back(std::move(b));
    } else if (kind == "view") {
      const size_t b = r.next<size_t>("a buffer index");
      if (b >= p.buffers.size()) fail("line " + std::to_string(n) + ": view of an unknown buffer");
      p.buffers[b].view_of = r.next<int>("a buffer index");
      p.buffers[b].view_offset = r.next<uint64_t>("a byte offset");
    } else if (kind == "step") {
      Step s;
      s.function = r.next<int>("a function index");
      s.label = r.name("a label");
      s.args.resize(r.next<size_t>("an argument count"));
      for (auto& a : s.args) a = r.next<int>("a buffer index");
      s.packs.resize(r.next<size_t>("a pack count"));
      for (auto& k : s.packs) {
        k.from = r.next<int>("a buffer index");
        k.to = r.next<int>("a buffer index");
        k.axis = r.next<int>("an axis");
        k.block = r.next<int64_t>("a block");
      }
      p.steps.push_back(std::move(s));
    } else if (kind == "input") {
      p.inputs.push_back(r.next<int>("a buffer index"));
    } else if (kind == "output") {
      p.outputs.push_back(r.next<int>("a buffer index"));
    } else {
      fail("line " + std::to_string(n) + ": unknown record '" + kind + "'");
    }
  }
  if (!header) fail("empty text");
  validate(p);
  return p;
}

void validate(const Plan& p) {
  const int nb = static_cast<int>(p.buffers.size());
  auto check_index = [&](int b, const std::string& where) {
    if (b < 0 || b >= nb) fail(where + ": buffer index " + std::to_string(b) + " out of range");
  };
  for (const auto& b : p.buffers) {
    for (int64_t d : b.shape)
      if (d < 0) fail("buffer '" + b.name + "': negative dimension");
    if (b.bits == 0 || (b.bits % 8 != 0 && b.bits != 1))  // bool: 1 bit, stored in a byte
      fail("buffer '" + b.name + "': element bits " + std::to_string(b.bits));
    if (b.role == Role::Constant && b.offset + b.bytes() > p.constant_bytes)
      fail("buffer '" + b.name + "': constant bytes past the end of the blob");
  }
  for (const auto& b : p.buffers)
    if (b.view_of >= 0) check_index(b.view_of, "buffer '" + b.name + "'");  // before any chain is walked
  for (const auto& b : p.buffers) {
    if (b.view_of < 0) continue;
    const std::string where = "buffer '" + b.name + "'";
    const Buffer& of = p.buffers[b.view_of];
    if (b.role != Role::Activation || of.role != Role::Activation) fail(where + ": only an activation can view another");
    if (b.view_offset % kActivationAlign != 0 || b.view_offset + b.bytes() > of.bytes())
      fail(where + ": its view does not fit inside '" + of.name + "' at a 64-byte aligned offset");
    int hops = 0;  // a chain of views must end at a buffer with storage
    for (int at = b.view_of; at >= 0; at = p.buffers[at].view_of)
      if (++hops > nb) fail(where + ": views form a cycle");
  }
  for (const auto& s : p.steps) {
    const std::string where = "step " + s.label;
    if (s.function == kElided && !s.packs.empty()) fail(where + ": an elided step packs nothing");
    if (s.function != kElided && (s.function < 0 || s.function >= static_cast<int>(p.functions.size())))
      fail(where + ": function index out of range");
    for (int a : s.args) check_index(a, where);
    for (const auto& k : s.packs) {
      check_index(k.from, where);
      check_index(k.to, where);
      const Buffer& from = p.buffers[k.from];
      if (k.axis < 0 || k.axis >= static_cast<int>(from.shape.size()) || k.block < 1 ||
          from.shape[k.axis] % k.block != 0 || from.bytes() != p.buffers[k.to].bytes())
        fail(where + ": packing '" + from.name + "' does not fit '" + p.buffers[k.to].name + "'");
    }
  }
  for (int i : p.inputs) {
    check_index(i, "input");
    if (p.buffers[i].role != Role::Input) fail("input '" + p.buffers[i].name + "' does not have the input role");
  }
  for (int o : p.outputs) check_index(o, "output");
}

Executor::Executor(Plan plan, std::vector<EntryFn> functions, std::vector<const void*> constants, bool huge_pages)
    : plan_(std::move(plan)), functions_(std::move(functions)) {
  validate(plan_);
  if (functions_.size() != plan_.functions.size()) fail("function table size differs from the plan's");
  for (size_t f = 0; f < functions_.size(); f++)
    if (!functions_[f]) fail("no code for function " + plan_.functions[f]);
  const size_t nb = plan_.buffers.size();
  halide_buffers_.assign(nb, halide_buffer_t{});
  dims_.resize(nb);
  for (size_t i = 0; i < nb; i++) {
    const Buffer& b = plan_.buffers[i];
    halide_buffer_t& h = halide_buffers_[i];
    h.type.code = static_cast<halide_type_code_t>(b.type_code);
    h.type.bits = b.bits;
    h.type.lanes = 1;
    const int rank = static_cast<int>(b.shape.size());
    dims_[i].resize(rank);
    int64_t stride = 1;
    for (int k = 0; k < rank; k++) {  // Halide's dim 0 is the innermost (last ONNX) axis
      halide_dimension_t& d = dims_[i][k];
      d.min = 0;
      d.extent = static_cast<int32_t>(b.shape[rank - 1 - k]);
      d.stride = static_cast<int32_t>(stride);
      stride *= b.shape[rank - 1 - k];
    }
    h.dimensions = rank;
    h.dim = dims_[i].data();
    if (b.role == Role::Constant) {
      if (i >= constants.size() || !constants[i]) fail("no bytes for constant '" + b.name + "'");
      h.host = static_cast<uint8_t*>(const_cast<void*>(constants[i]));  // Halide never writes its inputs
    }
  }
  const std::vector<uint64_t> offsets = plan_arena(plan_, arena_bytes_);
  arena_ = allocate_page_aligned_bytes(arena_bytes_, huge_pages);
  uint8_t* base = arena_.get();
  for (size_t i = 0; i < nb; i++) {  // a view: its root's place plus the offsets along the chain
    uint64_t offset = 0;
    const int root = root_of(plan_, static_cast<int>(i), &offset);
    if (plan_.buffers[root].role == Role::Activation) halide_buffers_[i].host = base + offsets[root] + offset;
  }
  for (const auto& s : plan_.steps) {
    std::vector<void*> a;
    for (int b : s.args) a.push_back(&halide_buffers_[b]);
    argv_.push_back(std::move(a));
  }
  step_seconds_.assign(plan_.steps.size(), 0);
}

Executor::~Executor() = default;

void Executor::run(const void* const* inputs, void* const* outputs, bool time_steps) {
  // A buffer whose host is null is a bounds query to Halide, which would then compute nothing:
  // an empty input (a dimension of 0, no bytes) gets a valid address all the same.
  static uint8_t empty_tensor[64];
  for (size_t i = 0; i < plan_.inputs.size(); i++) {
    const Buffer& b = plan_.buffers[plan_.inputs[i]];
    if (!inputs[i] && b.bytes() > 0) fail("no data for input '" + b.name + "'");
    halide_buffers_[plan_.inputs[i]].host = inputs[i] ? static_cast<uint8_t*>(const_cast<void*>(inputs[i])) : empty_tensor;
  }
  using Clock = std::chrono::steady_clock;
  for (size_t s = 0; s < plan_.steps.size(); s++) {
    const Step& step = plan_.steps[s];
    const auto t0 = time_steps ? Clock::now() : Clock::time_point{};
    for (const Pack& k : step.packs) {
      const Buffer& from = plan_.buffers[k.from];
      block_copy_axis(from.shape.data(), from.shape.size(), static_cast<size_t>(k.axis), k.block,
                      halide_buffers_[k.from].host, halide_buffers_[k.to].host, (from.bits + 7) / 8, true);
    }
    const int rc = step.function == kElided ? 0 : functions_[step.function](argv_[s].data());
    if (time_steps) step_seconds_[s] = std::chrono::duration<double>(Clock::now() - t0).count();
    if (rc != 0) throw std::runtime_error("step " + std::to_string(s) + " (" + step.label + ") failed at run time (Halide error " + std::to_string(rc) + ")");
  }
  for (size_t o = 0; o < plan_.outputs.size(); o++) {
    const int b = plan_.outputs[o];
    if (plan_.buffers[b].bytes() == 0) continue;
    if (!outputs[o]) fail("no storage for output '" + plan_.buffers[b].name + "'");
    std::memcpy(outputs[o], halide_buffers_[b].host, plan_.buffers[b].bytes());
  }
  for (int i : plan_.inputs) halide_buffers_[i].host = nullptr;  // the caller's memory is not kept
}

}  // namespace ts::plan
