#include "measure/workload_compiler.h"

#include <fmt/format.h>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <fstream>
#include <spdlog/spdlog.h>
#include <thread>

#include "codegen_hash.h"
#include "lower/lower.h"
#include "graph/file_io.h"
#include "measure/subprocess.h"
#include "measure/worker_pool.h"
#include "measure/workload_code.h"
#include "schedule/default_schedule.h"
#include "schedule/task_prefetch.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

// The digest a cache entry's shared object is checked against before it is loaded.
std::string digest_path(const std::string& so) { return so + ".fnv"; }
std::string file_digest(const std::string& path) { return fnv1a_hex(read_regular_file(path, "a shared object")); }

// Whether `so` is intact: its digest file matches its bytes. An entry that is not (truncated,
// overwritten, planted, or left half-written by a kill) is removed with a warning, so that it is
// compiled again instead of loaded.
bool intact(const std::string& so, const std::vector<std::string>& companions) {
  std::error_code ec;
  if (!fs::exists(so, ec)) return false;
  std::ifstream f(digest_path(so));
  std::string recorded;
  std::getline(f, recorded);
  bool ok = false;
  try {
    ok = !recorded.empty() && recorded == file_digest(so);
    for (const auto& c : companions) ok = ok && fs::exists(c, ec);
  } catch (const Error&) {
    ok = false;
  }
  if (ok) return true;
  spdlog::warn("{}: damaged or incomplete code cache entry; compiling it again", so);
  for (const auto& p : std::vector<std::string>{so, digest_path(so)}) fs::remove(p, ec);
  for (const auto& c : companions) fs::remove(c, ec);
  return false;
}

// Links `obj` into the shared object `so` with the system compiler, then records its digest;
// atomic via rename (a kill leaves no entry that passes intact()).
void link_shared(const std::string& obj, const std::string& so, const std::string& what) {
  std::string tmp = so + fmt::format(".tmp{}", getpid());
  std::vector<std::string> argv = cxx_command();
  argv.insert(argv.end(), {"-shared", "-o", tmp, obj});
  ProgramResult r = run_program(argv);
  if (!r.ok()) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw Error(fmt::format("{}: linking {} failed ({}): {}", what, so,
                            r.signal ? fmt::format("signal {}", r.signal) : fmt::format("exit status {}", r.exit_code),
                            r.output));
  }
  const std::string digest = file_digest(tmp);
  const std::string digest_tmp = digest_path(so) + fmt::format(".tmp{}", getpid());
  std::ofstream(digest_tmp) << digest << "\n";
  fs::rename(tmp, so);
  fs::rename(digest_tmp, digest_path(so));
}


// Temporary files of a process that is gone (killed while compiling or linking): "<entry>.tmp<PID>"
// with an optional suffix. A live process's are left alone.
void remove_stale_temp_files(const std::string& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t at = name.rfind(".tmp");
    if (at == std::string::npos) continue;
    size_t digits = at + 4;
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) digits++;
    if (digits == at + 4 || digits - at - 4 > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name.substr(at + 4, digits - at - 4)));
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    if (fs::remove(it->path(), rm)) spdlog::debug("{}: removed a temporary file of process {}, which is gone", it->path().string(), pid);
  }
}

// The cache holds code this process will dlopen: a directory others can write to would let them
// plant it. A directory created here is private (0700); an existing one must be the user's own and
// not writable by group or others.
void check_private_root(const std::string& root, bool created) {
  std::error_code ec;
  if (created) fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace, ec);
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) throw Error(fmt::format("{}: cannot stat the code cache directory", root));
  if (st.st_uid != geteuid())
    throw Error(fmt::format("{}: the code cache directory belongs to another user (uid {}); use your own --cache-dir",
                            root, st.st_uid));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw Error(fmt::format("{}: the code cache directory is writable by group or others (mode {:o}); run "
                            "chmod go-w on it or use another --cache-dir",
                            root, st.st_mode & 0777));
}

}  // namespace

std::string code_cache_root(const std::string& root) {
  if (!root.empty()) return fs::absolute(root).string();
  if (const char* d = std::getenv("TENSORSCHED_CACHE_DIR"); d && *d) return fs::absolute(d).string();
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fmt::format("{}/tensorsched", x);
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    const passwd* pw = getpwuid(getuid());  // HOME unset: the account's home, never a shared /tmp
    home = pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : nullptr;
  }
  if (!home) throw Error("code cache: no HOME and no home directory for this user; set TENSORSCHED_CACHE_DIR");
  return fmt::format("{}/.cache/tensorsched", home);
}

Halide::Target host_code_target() {
  static const Halide::Target target = [] {  // the CPU does not change while the process runs
    Halide::Target t = Halide::get_host_target();
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool fp16 = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 23)) != 0;  // CPUID.7.0:EDX[23]
    if (!fp16 && t.has_feature(Halide::Target::AVX512_SapphireRapids))
      t = t.without_feature(Halide::Target::AVX512_SapphireRapids);
#endif
    return t;
  }();
  return target;
}

std::string code_cache_build_dir() { return std::string(TENSORSCHED_VERSION) + "-" + TENSORSCHED_CODEGEN_HASH; }

CodeCache CodeCache::open_default(const Halide::Target& target, const std::string& root_in) {
  const std::string root = code_cache_root(root_in);
  CodeCache c;
  c.target = target;
  // The generator's source hash: code compiled by another lowering or default schedule is never reused.
  c.dir = (fs::path(root) / code_cache_build_dir() / target.to_string()).string();
  std::error_code ec;
  const bool created = !fs::exists(root, ec);
  fs::create_directories(c.dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create the code cache directory: {}", c.dir, ec.message()));
  check_private_root(root, created);
  remove_stale_temp_files(c.dir);
  return c;
}

std::string workload_function_name(const Workload& w, const std::string& schedule_hash) {
  return fmt::format("ts_{}_{}", w.key_hash(), schedule_hash);
}

std::string CodeCache::object_path(const Workload& w, const std::string& schedule_hash) const {
  return (fs::path(dir) / (workload_function_name(w, schedule_hash) + ".so")).string();
}

std::string CodeCache::relocatable_path(const Workload& w, const std::string& schedule_hash) const {
  return (fs::path(dir) / (workload_function_name(w, schedule_hash) + ".o")).string();
}

std::vector<std::string> CodeCache::entry_files(const Workload& w, const std::string& schedule_hash) const {
  const std::string so = object_path(w, schedule_hash);
  return {so, digest_path(so), relocatable_path(w, schedule_hash)};
}

bool CodeCache::has_entry(const Workload& w, const std::string& schedule_hash) const {
  return intact(object_path(w, schedule_hash), {relocatable_path(w, schedule_hash)});
}

std::string CodeCache::runtime_object_path() const { return (fs::path(dir) / "halide_runtime.o").string(); }

std::string CodeCache::ensure_runtime() const {
  std::string so = (fs::path(dir) / "halide_runtime.so").string();
  const std::string obj = runtime_object_path();
  if (intact(so, {obj})) return so;
  std::string tmp = obj + fmt::format(".tmp{}.o", getpid());
  Halide::compile_standalone_runtime(tmp, target.without_feature(Halide::Target::NoRuntime));
  fs::rename(tmp, obj);
  link_shared(obj, so, "Halide runtime");
  return so;
}

namespace {

// Every buffer a workload is called with is dense, with the workload's fixed (storage) shape
// (WorkloadCall, CompiledModel and the C API allocate them so): telling Halide makes every
// stride a constant, so addresses fold into immediate offsets and no register holds a stride.
// Inputs also get their bounds; outputs only their strides: with an output's extent fixed too,
// Halide 14 gave wrong values for an Adams2019 schedule of a conv
// (tests/schedule/autoscheduler_test.cpp).
// A caller passing anything else gets Halide's constraint error, never wrong results.
template <typename DimOf>
void constrain_dense(const Shape& storage, bool bounds, DimOf dim_of) {
  if (num_elements(storage) == 0) return;  // an empty tensor's strides are whatever its allocator chose
  const int rank = static_cast<int>(storage.size());
  int64_t stride = 1;
  for (int k = 0; k < rank; k++) {
    const int64_t extent = storage[rank - 1 - k];
    if (bounds) dim_of(k).set_bounds(0, static_cast<int>(extent));
    dim_of(k).set_stride(static_cast<int>(stride));
    stride *= extent;
  }
}

}  // namespace

Schedule default_schedule_of(const Workload& w) {
  const LoweredWorkload lw = lower_workload(w);
  return default_schedule(lw.outputs, host_code_target());
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
    constrain_dense(shape, true, [&](int k) { return p.dim(k); });
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
  for (size_t k = 0; k < lw.outputs.size(); k++) {
    const auto& info = w.graph.tensor(w.graph.outputs[k]);
    Halide::Func f = lw.outputs[k];
    constrain_dense(storage_shape(info.layout, info.shape), false, [&](int d) { return f.output_buffer().dim(d); });
  }
  lw.pipeline = Halide::Pipeline(lw.outputs);
  return lw;
}

void compile_workload(const Workload& w, const ScheduleFn& schedule, const std::string& schedule_hash,
                      const CodeCache& cache, const std::vector<InputLayout>& layouts) {
  const std::string so = cache.object_path(w, schedule_hash);
  const std::string kept = cache.relocatable_path(w, schedule_hash);
  if (cache.has_entry(w, schedule_hash)) return;
  const std::string what = fmt::format("workload {} ({})", w.key_hash(), w.name);
  try {
    LoweredWorkload lw = lower_workload(w, layouts);
    schedule(lw.outputs, cache.target);
    add_task_prefetch_passes(lw.pipeline, lw.outputs);  // what the schedule asked for (schedule/task_prefetch.h)
    const std::string obj = kept + fmt::format(".tmp{}.o", getpid());
    try {
      lw.pipeline.compile_to_object(obj, lw.args, workload_function_name(w, schedule_hash),
                                    cache.target.with_feature(Halide::Target::NoRuntime));
      link_shared(obj, so, what);
      fs::rename(obj, kept);  // kept for artifacts, which link every workload into one library
    } catch (...) {
      std::error_code ec;
      fs::remove(obj, ec);  // a failed compile or link leaves nothing behind
      throw;
    }
  } catch (const Halide::Error& e) {
    std::string m = e.what();
    std::replace(m.begin(), m.end(), '\n', ' ');
    throw Error(fmt::format("{}: Halide: {}", what, m));
  }
}

std::vector<CompileOutcome> compile_batch(const std::vector<CompileJob>& jobs, const CodeCache& cache,
                                          const CompileBatchOptions& opts) {
  WorkerPoolOptions pool;
  pool.jobs = opts.jobs > 0 ? opts.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pool.timeout_s = opts.timeout_s;
  pool.capture_stderr = true;  // LLVM assertions and linker output
  stop_halide_threads();       // a CompiledModel in this process may have started them
  auto results = run_workers(
      jobs.size(),
      [&](size_t i, int) {
        cache.ensure_runtime();  // built here too, so the parent never runs LLVM
        const CompileJob& j = jobs[i];
        compile_workload(*j.workload, j.schedule, j.hash, cache, j.layouts);
        return 0;
      },
      pool);
  std::vector<CompileOutcome> out(jobs.size());
  for (size_t i = 0; i < results.size(); i++) {
    const WorkerResult& r = results[i];
    out[i].seconds = r.seconds;
    if (r.exited_ok) continue;
    const Workload& w = *jobs[i].workload;
    std::string why = r.timed_out || r.message.empty()
                          ? fmt::format("workload {} ({}): compiler worker {}", w.key_hash(), w.name,
                                        r.describe_end(pool.timeout_s))
                          : r.message;
    if (!r.stderr_tail.empty() && (r.timed_out || r.signal || r.message.empty()))
      why += ": " + message_tail(r.stderr_tail, kMessageChars / 2);
    out[i].error = why.substr(0, kMessageChars);
  }
  return out;
}

}  // namespace ts
