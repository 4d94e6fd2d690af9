// The `tensorsched` Python module (pybind11): compile and tune models, and load a compiled
// artifact to run it on numpy arrays. The artifact is loaded through its own C API
// (api/c/tensorsched_model.h) exactly as a C program would use it, so Python runs the code a
// user ships, not tensorsched's in-process CompiledModel.
//
//   import tensorsched, numpy as np
//   tensorsched.compile("resnet18.onnx", "out", db="records.db")
//   m = tensorsched.Model("out")
//   (logits,) = m.run(np.zeros(m.inputs[0]["shape"], np.float32))
#include <dlfcn.h>
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <optional>

#include "api/c/tensorsched_model.h"
#include "api/compile_model.h"
#include "search/search_policy.h"
#include "tune/records_db.h"
#include "tune/tuner.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace ts {

namespace {

// One artifact library loaded with dlopen, its C API and one model object.
class ArtifactModel {
 public:
  explicit ArtifactModel(const std::string& path) {
    so_ = library_path(path);
    handle_ = dlopen(so_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw Error(fmt::format("{}: cannot load the artifact: {}", so_, dlerror()));
    create_ = symbol<decltype(create_)>("ts_model_create");
    destroy_ = symbol<decltype(destroy_)>("ts_model_destroy");
    error_ = symbol<decltype(error_)>("ts_model_last_error");
    count_ = symbol<decltype(count_)>("ts_model_count");
    name_ = symbol<decltype(name_)>("ts_model_name");
    rank_ = symbol<decltype(rank_)>("ts_model_rank");
    shape_ = symbol<decltype(shape_)>("ts_model_shape");
    dtype_ = symbol<decltype(dtype_)>("ts_model_dtype");
    run_ = symbol<decltype(run_)>("ts_model_run");
    threads_ = symbol<decltype(threads_)>("ts_model_set_threads");
    version_ = symbol<decltype(version_)>("ts_model_version");
    model_ = create_(nullptr);
    if (!model_) throw Error(fmt::format("{}: ts_model_create: {}", so_, error_()));
    for (ts_io io : {TS_INPUT, TS_OUTPUT})
      for (int i = 0; i < count_(model_, io); i++) {
        Port p{name_(model_, io, i), dtype_(model_, io, i), {}};
        const int64_t* s = shape_(model_, io, i);
        p.shape.assign(s, s + rank_(model_, io, i));
        (io == TS_INPUT ? inputs_ : outputs_).push_back(std::move(p));
      }
  }
  ~ArtifactModel() {
    if (model_) destroy_(model_);
    // The library stays loaded: its runtime's worker threads may still be parked in it.
  }
  ArtifactModel(const ArtifactModel&) = delete;
  ArtifactModel& operator=(const ArtifactModel&) = delete;

  py::list describe(bool inputs) const {
    py::list l;
    for (const Port& p : inputs ? inputs_ : outputs_)
      l.append(py::dict(py::arg("name") = p.name, py::arg("shape") = py::tuple(py::cast(p.shape)),
                        py::arg("dtype") = p.dtype));
    return l;
  }

  // Inputs positionally or by name; returns the outputs in model order.
  py::list run(const py::args& args, const py::kwargs& kwargs) {
    if (args.size() && kwargs.size()) throw Error("Model.run: give inputs either by position or by name, not both");
    std::vector<py::array> in;
    for (size_t i = 0; i < inputs_.size(); i++) {
      const Port& p = inputs_[i];
      py::object given;
      if (kwargs.size()) {
        if (!kwargs.contains(p.name.c_str())) throw Error(fmt::format("Model.run: no value for input '{}'", p.name));
        given = kwargs[p.name.c_str()];
      } else {
        if (args.size() != inputs_.size())
          throw Error(fmt::format("Model.run: {} inputs given, the model has {}", args.size(), inputs_.size()));
        given = args[i];
      }
      py::array a = py::array::ensure(given, py::array::c_style);
      if (!a) throw Error(fmt::format("Model.run: input '{}' is not array-like", p.name));
      if (!a.dtype().is(py::dtype(p.dtype)))
        throw Error(fmt::format("Model.run: input '{}' is {}, the model takes {}", p.name,
                                py::str(a.dtype()).cast<std::string>(), p.dtype));
      std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
      if (shape != p.shape)
        throw Error(fmt::format("Model.run: input '{}' has shape {}, the model takes {}", p.name, shape_str(shape),
                                shape_str(p.shape)));
      in.push_back(a);
    }
    if (kwargs.size() > inputs_.size()) throw Error("Model.run: unknown input names given");
    std::vector<const void*> in_ptrs;
    for (auto& a : in) in_ptrs.push_back(a.data());
    std::vector<py::array> out;
    std::vector<void*> out_ptrs;
    for (const Port& p : outputs_) {
      out.emplace_back(py::dtype(p.dtype), std::vector<py::ssize_t>(p.shape.begin(), p.shape.end()));
      out_ptrs.push_back(out.back().mutable_data());
    }
    int rc;
    {
      py::gil_scoped_release release;
      rc = run_(model_, in_ptrs.data(), out_ptrs.data());
    }
    if (rc != 0) throw Error(fmt::format("{}: ts_model_run: {}", so_, error_()));
    py::list l;
    for (auto& a : out) l.append(a);
    return l;
  }

  void set_threads(int threads) { threads_(threads); }
  std::string version() const { return version_(); }
  const std::string& path() const { return so_; }

 private:
  struct Port {
    std::string name, dtype;
    std::vector<int64_t> shape;
  };

  // A directory is an artifact directory: its one lib*.so.
  static std::string library_path(const std::string& path) {
    if (!fs::is_directory(path)) return path;
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(path)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("lib", 0) == 0 && e.path().extension() == ".so") found.push_back(e.path().string());
    }
    if (found.size() != 1)
      throw Error(fmt::format("{}: expected one lib<name>.so in the artifact directory, found {}", path, found.size()));
    return found[0];
  }

  template <typename F> F symbol(const char* name) {
    void* p = dlsym(handle_, name);
    if (!p) throw Error(fmt::format("{}: not a tensorsched artifact (no {})", so_, name));
    return reinterpret_cast<F>(p);
  }

  std::string so_;
  void* handle_ = nullptr;
  ts_model* model_ = nullptr;
  std::vector<Port> inputs_, outputs_;
  decltype(&ts_model_create) create_;
  decltype(&ts_model_destroy) destroy_;
  decltype(&ts_model_last_error) error_;
  decltype(&ts_model_count) count_;
  decltype(&ts_model_name) name_;
  decltype(&ts_model_rank) rank_;
  decltype(&ts_model_shape) shape_;
  decltype(&ts_model_dtype) dtype_;
  decltype(&ts_model_run) run_;
  decltype(&ts_model_set_threads) threads_;
  decltype(&ts_model_version) version_;
};

py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

py::object compile_py(const std::string& model, const std::string& out_dir, const std::string& db,
                      const std::string& name, const std::string& cache_dir, const std::string& layout,
                      const std::vector<std::string>& shapes, bool static_library, bool allow_foreign_records) {
  CompileRequest req;
  req.model = model;
  req.load = LoadOptions{shapes, layout};
  req.out_dir = out_dir;
  req.name = name;
  req.db_path = db;
  req.cache_dir = cache_dir;
  req.static_library = static_library;
  req.allow_foreign_records = allow_foreign_records;
  CompileResult r;
  {
    py::gil_scoped_release release;
    r = compile_model(req);
  }
  nlohmann::json j = r.artifact.manifest_json;
  j["shared_library"] = r.artifact.shared_library;
  j["static_library"] = r.artifact.static_library;
  j["header"] = r.artifact.header;
  j["warnings"] = r.warnings;
  return to_python(j);
}

py::object tune_py(const std::string& model, const std::string& db_path, std::optional<double> seconds,
                   std::optional<int> trials, const std::string& policy_name, const std::string& cache_dir,
                   uint64_t seed, const std::string& layout, const std::string& scheduler, int network_evals) {
  if (seconds.has_value() == trials.has_value()) throw Error("tune: give exactly one budget, seconds= or trials=");
  TuneSummary s;
  {
    py::gil_scoped_release release;
    Graph g = load_model(model, LoadOptions{{}, layout});
    RecordsDB db(db_path);
    auto policy = make_policy(policy_name);
    TuneOptions o;
    o.seconds = seconds.value_or(0);
    o.trials = trials.value_or(0);
    o.seed = seed;
    o.scheduler = scheduler;
    o.network_evals = network_evals;
    o.measure.cache_root = cache_dir;
    s = tune_model(g, db, *policy, o);
  }
  return to_python(summary_json(s));
}

}  // namespace

}  // namespace ts

PYBIND11_MODULE(tensorsched, m) {
  using namespace ts;
  m.doc() = "tensorsched: compile ONNX models to fast CPU code, tune them, and run compiled artifacts";
  m.attr("__version__") = TENSORSCHED_VERSION;
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);

  py::class_<ArtifactModel>(m, "Model", "A compiled artifact (directory or lib<name>.so) loaded through its C API")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def_property_readonly("inputs", [](const ArtifactModel& a) { return a.describe(true); },
                             "[{'name', 'shape', 'dtype'}] in model order")
      .def_property_readonly("outputs", [](const ArtifactModel& a) { return a.describe(false); })
      .def_property_readonly("path", &ArtifactModel::path)
      .def_property_readonly("version", &ArtifactModel::version)
      .def("run", &ArtifactModel::run, "run(*inputs) or run(name=array, ...) -> [outputs] (numpy arrays)")
      .def("__call__", &ArtifactModel::run)
      .def("set_threads", &ArtifactModel::set_threads, py::arg("threads"),
           "Threads the artifact's code may use (<= 0: one per core)");

  m.def("compile", &compile_py, py::arg("model"), py::arg("out_dir"), py::arg("db") = "", py::arg("name") = "model",
        py::arg("cache_dir") = "", py::arg("layout") = "blocked", py::arg("shapes") = std::vector<std::string>{},
        py::arg("static_library") = true, py::arg("allow_foreign_records") = false,
        "Compile an ONNX model (best schedules of the records database `db`, else the defaults) into out_dir; "
        "returns the manifest with the paths written");
  m.def("tune", &tune_py, py::arg("model"), py::arg("db"), py::arg("seconds") = py::none(),
        py::arg("trials") = py::none(), py::arg("policy") = "random", py::arg("cache_dir") = "", py::arg("seed") = 0,
        py::arg("layout") = "blocked", py::arg("scheduler") = "sequential", py::arg("network_evals") = TuneOptions{}.network_evals,
        "Tune every workload of an ONNX model, recording into the database `db`, with a task scheduler "
        "(sequential, round-robin, linear, gradient, dynatune), then time network variants in the whole model "
        "(network_evals per thread count, 0 = none); returns the summary (with the model-latency curve and "
        "'network', the in-network trials)");
}
