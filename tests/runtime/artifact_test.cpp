// write_artifact on a real model with blocked layouts: the shared library loads with dlopen in a
// process that also runs tensorsched's own Halide runtime, exports only the C API, describes the
// model's inputs and outputs, gives the CompiledModel's outputs bit for bit, reads replacement
// constants from a file, and reports misuse through ts_model_last_error.
#include "runtime/artifact.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "../../src/api/c/tensorsched_model.h"
#include "graph/layout_plan.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace fs = std::filesystem;

namespace ts {
namespace {

// The C API resolved from a loaded artifact.
struct Api {
  void* handle = nullptr;
  decltype(&ts_model_create) create;
  decltype(&ts_model_destroy) destroy;
  decltype(&ts_model_last_error) last_error;
  decltype(&ts_model_count) count;
  decltype(&ts_model_name) name;
  decltype(&ts_model_shape) shape;
  decltype(&ts_model_rank) rank;
  decltype(&ts_model_dtype) dtype;
  decltype(&ts_model_bytes) bytes;
  decltype(&ts_model_run) run;

  explicit Api(const std::string& so) {
    handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error(dlerror());
    auto sym = [&](const char* n) {
      void* p = dlsym(handle, n);
      if (!p) throw std::runtime_error(std::string("missing ") + n);
      return p;
    };
    create = reinterpret_cast<decltype(create)>(sym("ts_model_create"));
    destroy = reinterpret_cast<decltype(destroy)>(sym("ts_model_destroy"));
    last_error = reinterpret_cast<decltype(last_error)>(sym("ts_model_last_error"));
    count = reinterpret_cast<decltype(count)>(sym("ts_model_count"));
    name = reinterpret_cast<decltype(name)>(sym("ts_model_name"));
    shape = reinterpret_cast<decltype(shape)>(sym("ts_model_shape"));
    rank = reinterpret_cast<decltype(rank)>(sym("ts_model_rank"));
    dtype = reinterpret_cast<decltype(dtype)>(sym("ts_model_dtype"));
    bytes = reinterpret_cast<decltype(bytes)>(sym("ts_model_bytes"));
    run = reinterpret_cast<decltype(run)>(sym("ts_model_run"));
  }
  ~Api() { dlclose(handle); }
};

TEST(Artifact, SharedLibraryRunsTheCompiledModelsCode) {
  Graph g = test::small_cnn();
  plan_layouts(g, 8);  // the conv's weight and output travel blocked: packed constants in the blob
  CompileOptions copts;
  copts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel model(g, copts);
  auto in = random_inputs(model.graph(), 4);
  auto want = model.run(in);

  ArtifactOptions ao;
  ao.out_dir = (test::temp_dir() / "artifact 'quoted' dir").string();
  ao.name = "cnn";
  ao.constants_file = true;
  ao.manifest = {{"model", "small_cnn"}};
  Artifact a = write_artifact(model, ao);
  ASSERT_TRUE(fs::exists(a.shared_library));
  ASSERT_TRUE(fs::exists(a.static_library));
  ASSERT_TRUE(fs::exists(a.header));
  EXPECT_EQ(a.manifest_json["model"], "small_cnn");
  EXPECT_EQ(a.manifest_json["functions"].size(), model.plan().functions.size());
  EXPECT_EQ(a.manifest_json["constant_bytes"], model.plan().constant_bytes);

  Api api(a.shared_library);
  EXPECT_EQ(dlsym(api.handle, "halide_malloc"), nullptr);  // its runtime is its own
  ts_model* m = api.create(nullptr);
  ASSERT_NE(m, nullptr) << api.last_error();
  ASSERT_EQ(api.count(m, TS_INPUT), 1);
  ASSERT_EQ(api.count(m, TS_OUTPUT), 1);
  EXPECT_STREQ(api.name(m, TS_INPUT, 0), "x");
  EXPECT_STREQ(api.dtype(m, TS_OUTPUT, 0), "float32");
  ASSERT_EQ(api.rank(m, TS_INPUT, 0), 4);
  EXPECT_EQ(std::vector<int64_t>(api.shape(m, TS_INPUT, 0), api.shape(m, TS_INPUT, 0) + 4),
            (std::vector<int64_t>{1, 3, 12, 12}));
  ASSERT_EQ(api.bytes(m, TS_OUTPUT, 0), want[0].bytes.size());
  EXPECT_EQ(api.name(m, TS_INPUT, 3), nullptr);
  EXPECT_NE(std::string(api.last_error()).find("no input 3"), std::string::npos);

  std::vector<uint8_t> got(want[0].bytes.size());
  const void* inputs[] = {in.at("x").bytes.data()};
  void* outputs[] = {got.data()};
  ASSERT_EQ(api.run(m, inputs, outputs), 0) << api.last_error();
  EXPECT_EQ(got, want[0].bytes);  // the same code on the same data

  const void* missing[] = {nullptr};
  EXPECT_EQ(api.run(m, missing, outputs), -1);
  EXPECT_NE(std::string(api.last_error()).find("input 'x'"), std::string::npos) << api.last_error();
  api.destroy(m);

  // The constants file replaces the embedded constants: the same bytes give the same outputs.
  ts_model* from_file = api.create((fs::path(ao.out_dir) / "constants.bin").c_str());
  ASSERT_NE(from_file, nullptr) << api.last_error();
  std::fill(got.begin(), got.end(), 0);
  ASSERT_EQ(api.run(from_file, inputs, outputs), 0) << api.last_error();
  EXPECT_EQ(got, want[0].bytes);
  api.destroy(from_file);
  EXPECT_EQ(api.create("/nonexistent/constants.bin"), nullptr);
  EXPECT_NE(std::string(api.last_error()).find("/nonexistent/constants.bin"), std::string::npos);
}

}  // namespace
}  // namespace ts
