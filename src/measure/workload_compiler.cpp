#include "measure/workload_compiler.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "codegen_hash.h"
#include "lower/lower.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

// Links `obj` into the shared object `so` with the system compiler; atomic via rename.
void link_shared(const std::string& obj, const std::string& so, const std::string& what) {
  const char* cxx = std::getenv("CXX");
  std::string tmp = so + fmt::format(".tmp{}", getpid());
  std::string cmd = fmt::format("{} -shared -o '{}' '{}' 2>&1", cxx && *cxx ? cxx : "c++", tmp, obj);
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  int rc = p ? pclose(p) : -1;
  if (rc != 0) throw Error(fmt::format("{}: linking {} failed: {}", what, so, out));
  fs::rename(tmp, so);
}

}  // namespace

CodeCache CodeCache::open_default(const Halide::Target& target, const std::string& root_in) {
  std::string root = root_in;
  if (root.empty()) {
    if (const char* d = std::getenv("TENSORSCHED_CACHE_DIR"); d && *d) root = d;
    else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) root = fmt::format("{}/tensorsched", x);
    else root = fmt::format("{}/.cache/tensorsched", std::getenv("HOME") ? std::getenv("HOME") : "/tmp");
  }
  CodeCache c;
  c.target = target;
  // The generator's source hash: code compiled by another lowering or default schedule is never reused.
  c.dir = (fs::path(root) / (std::string(TENSORSCHED_VERSION) + "-" + TENSORSCHED_CODEGEN_HASH) / target.to_string()).string();
  std::error_code ec;
  fs::create_directories(c.dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create the code cache directory: {}", c.dir, ec.message()));
  return c;
}

std::string workload_function_name(const Workload& w, const std::string& schedule_hash) {
  return fmt::format("ts_{}_{}", w.key_hash(), schedule_hash);
}

std::string CodeCache::object_path(const Workload& w, const std::string& schedule_hash) const {
  return (fs::path(dir) / (workload_function_name(w, schedule_hash) + ".so")).string();
}

std::string CodeCache::ensure_runtime() const {
  std::string so = (fs::path(dir) / "halide_runtime.so").string();
  if (fs::exists(so)) return so;
  std::string obj = so + fmt::format(".{}.o", getpid());
  Halide::compile_standalone_runtime(obj, target.without_feature(Halide::Target::NoRuntime));
  link_shared(obj, so, "Halide runtime");
  fs::remove(obj);
  return so;
}

LoweredWorkload lower_workload(const Workload& w, const std::vector<InputLayout>& layouts) {
  LoweredWorkload lw;
  std::map<std::string, LTensor> bound;
  for (const auto& l : layouts)
    if (std::find(w.graph.inputs.begin(), w.graph.inputs.end(), l.input) == w.graph.inputs.end())
      throw Error(fmt::format("workload {} ({}): layout of '{}', which is not an input", w.key_hash(), w.name, l.input));
  for (const auto& name : w.graph.inputs) {
    const auto& info = w.graph.tensor(name);
    const InputLayout* layout = find_layout(layouts, name);
    if (layout && info.layout.blocked())
      throw Error(fmt::format("workload {} ({}): input '{}' is stored {} by the layout plan; a schedule cannot pack it again",
                              w.key_hash(), w.name, name, layout_suffix(info.layout)));
    Shape shape;
    try {
      shape = layout ? packed_shape(*layout, info.shape) : storage_shape(info.layout, info.shape);
    } catch (const Error& e) {
      throw Error(fmt::format("workload {} ({}): {}", w.key_hash(), w.name, e.what()));
    }
    const int rank = static_cast<int>(shape.size());
    Halide::ImageParam p(halide_type(info.dtype), rank, name);
    for (int k = 0; k < rank; k++) p.dim(k).set_estimate(0, static_cast<int>(shape[rank - 1 - k]));
    lw.params.push_back(p);
    lw.args.push_back(p);
    if (info.layout.blocked()) {
      // Stored blocked: the wrapper has the stored arguments and renames the parameter.
      const TensorArgs ta = tensor_args(info.shape, info.layout);
      Halide::Func f("input_" + name);
      f(ta.args) = p(std::vector<Halide::Expr>(ta.args.begin(), ta.args.end()));
      set_shape_estimates(f, shape);
      bound[name] = LTensor{f, info.shape, info.dtype, info.layout};
      continue;
    }
    bound[name] = define_tensor("input_" + name, info.shape, info.dtype, [&](const std::vector<Halide::Expr>& idx) {
      std::vector<Halide::Expr> x(idx.rbegin(), idx.rend());
      return layout ? packed_access(*layout, p, x) : p(x);
    });
  }
  auto values = lower_graph(w.graph, bound);
  for (const auto& o : w.graph.outputs) {
    const LTensor& t = values.at(o);
    // A fresh output stage: the value may also feed another output or be an input wrapper.
    lw.outputs.push_back(define_tensor("output_" + o, t.shape, t.dtype, [&](const std::vector<Halide::Expr>& i) {
      return t.at(i);
    }, w.graph.tensor(o).layout).func);
  }
  lw.pipeline = Halide::Pipeline(lw.outputs);
  return lw;
}

void compile_workload(const Workload& w, const ScheduleFn& schedule, const std::string& schedule_hash,
                      const CodeCache& cache, const std::vector<InputLayout>& layouts) {
  const std::string so = cache.object_path(w, schedule_hash);
  if (fs::exists(so)) return;
  const std::string what = fmt::format("workload {} ({})", w.key_hash(), w.name);
  try {
    LoweredWorkload lw = lower_workload(w, layouts);
    schedule(lw.outputs, cache.target);
    std::string obj = so + fmt::format(".{}.o", getpid());
    lw.pipeline.compile_to_object(obj, lw.args, workload_function_name(w, schedule_hash),
                                  cache.target.with_feature(Halide::Target::NoRuntime));
    link_shared(obj, so, what);
    fs::remove(obj);
  } catch (const Halide::Error& e) {
    std::string m = e.what();
    std::replace(m.begin(), m.end(), '\n', ' ');
    throw Error(fmt::format("{}: Halide: {}", what, m));
  }
}

}  // namespace ts
