// The C API of an artifact (tensorsched_model.h) over the plan executor. Compiled into each
// artifact together with runtime/plan_executor.cpp and the artifact's generated entry table
// (runtime/artifact.cpp writes it): the function table, the plan text and the constant blob.
#include "tensorsched_model.h"

#include <HalideRuntime.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "measure/pipeline_memory.h"
#include "measure/spinning_pool.h"
#include "runtime/huge_pages.h"
#include "runtime/plan_executor.h"

#define TS_API extern "C" __attribute__((visibility("default")))

namespace ts_artifact {
// Defined by the generated entry file of each artifact.
extern const ts::plan::EntryFn kFunctions[];
extern const size_t kFunctionCount;
extern const char kVersion[];
}  // namespace ts_artifact

extern "C" const unsigned char ts_artifact_plan[], ts_artifact_plan_end[];
extern "C" const unsigned char ts_artifact_constants[], ts_artifact_constants_end[];

struct ts_model {
  ts::HugePageBytes constants;                     // the constants (read from a file, else copied from the embedded ones), on huge pages
  std::unique_ptr<ts::plan::Executor> executor;
  std::vector<std::string> dtypes[2];              // per io, per index
};

namespace {

thread_local std::string last_error;

// Halide's default error handler prints and aborts the process; the library's user gets the
// message from ts_model_last_error() instead. Any pool thread may report, so it is shared.
std::mutex halide_error_mutex;
std::string halide_errors;

extern "C" void keep_halide_error(void*, const char* msg) {
  std::lock_guard<std::mutex> lock(halide_error_mutex);
  if (halide_errors.size() < 4096) halide_errors += (halide_errors.empty() ? "" : "; ") + std::string(msg ? msg : "");
}

std::string take_halide_errors() {
  std::lock_guard<std::mutex> lock(halide_error_mutex);
  std::string m;
  m.swap(halide_errors);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

int fail(const std::string& why) {
  last_error = why;
  return -1;
}

std::string dtype_name(const ts::plan::Buffer& b) {
  if (b.type_code == halide_type_float) return "float" + std::to_string(b.bits);
  if (b.type_code == halide_type_uint && b.bits == 1) return "bool";
  if (b.type_code == halide_type_uint) return "uint" + std::to_string(b.bits);
  return "int" + std::to_string(b.bits);
}

const ts::plan::Buffer* io_buffer(const ts_model* m, ts_io io, int index) {
  if (!m) {
    fail("null model");
    return nullptr;
  }
  const auto& p = m->executor->plan();
  const std::vector<int>& list = io == TS_INPUT ? p.inputs : p.outputs;
  if (index < 0 || index >= static_cast<int>(list.size())) {
    fail("no " + std::string(io == TS_INPUT ? "input" : "output") + " " + std::to_string(index));
    return nullptr;
  }
  return &p.buffers[list[index]];
}

}  // namespace

TS_API ts_model* ts_model_create(const char* constants_path) {
  halide_set_error_handler(keep_halide_error);
  halide_set_custom_do_par_for(ts::spinning_do_par_for);  // the pool tensorsched measured with
  halide_set_custom_malloc(ts::reusing_halide_malloc);     // and its pipelines' memory, kept across runs
  halide_set_custom_free(ts::reusing_halide_free);
  try {
    auto m = std::make_unique<ts_model>();
    const std::string text(reinterpret_cast<const char*>(ts_artifact_plan), ts_artifact_plan_end - ts_artifact_plan);
    ts::plan::Plan plan = ts::plan::parse(text);
    // The constants go to huge pages (runtime/huge_pages.h) either way: the embedded ones sit on
    // the library's 4 KiB file pages.
    size_t blob_bytes = static_cast<size_t>(ts_artifact_constants_end - ts_artifact_constants);
    if (constants_path) {
      FILE* f = std::fopen(constants_path, "rb");
      if (!f) return fail(std::string(constants_path) + ": cannot open the constants file"), nullptr;
      std::fseek(f, 0, SEEK_END);
      blob_bytes = static_cast<size_t>(std::ftell(f));
      m->constants = ts::allocate_page_aligned_bytes(blob_bytes);
      std::fseek(f, 0, SEEK_SET);
      const size_t got = blob_bytes ? std::fread(m->constants.get(), 1, blob_bytes, f) : 0;
      std::fclose(f);
      if (got != blob_bytes) return fail(std::string(constants_path) + ": short read"), nullptr;
    } else {
      m->constants = ts::allocate_page_aligned_bytes(blob_bytes);
      if (blob_bytes) std::memcpy(m->constants.get(), ts_artifact_constants, blob_bytes);
    }
    const unsigned char* blob = m->constants.get();
    if (blob_bytes < plan.constant_bytes)
      return fail("constants: " + std::to_string(blob_bytes) + " bytes, the model needs " + std::to_string(plan.constant_bytes)), nullptr;
    std::vector<const void*> constants;
    for (const auto& b : plan.buffers) constants.push_back(b.role == ts::plan::Role::Constant ? blob + b.offset : nullptr);
    for (int io = 0; io < 2; io++)
      for (int b : io == 0 ? plan.inputs : plan.outputs) m->dtypes[io].push_back(dtype_name(plan.buffers[b]));
    std::vector<ts::plan::EntryFn> fns(ts_artifact::kFunctions, ts_artifact::kFunctions + ts_artifact::kFunctionCount);
    m->executor = std::make_unique<ts::plan::Executor>(std::move(plan), std::move(fns), std::move(constants));
    last_error.clear();
    return m.release();
  } catch (const std::exception& e) {
    fail(e.what());
    return nullptr;
  }
}

TS_API void ts_model_destroy(ts_model* model) { delete model; }

TS_API const char* ts_model_last_error(void) { return last_error.c_str(); }

TS_API int ts_model_count(const ts_model* m, ts_io io) {
  if (!m) return fail("null model");
  const auto& p = m->executor->plan();
  return static_cast<int>((io == TS_INPUT ? p.inputs : p.outputs).size());
}

TS_API const char* ts_model_name(const ts_model* m, ts_io io, int index) {
  const auto* b = io_buffer(m, io, index);
  return b ? b->name.c_str() : nullptr;
}

TS_API int ts_model_rank(const ts_model* m, ts_io io, int index) {
  const auto* b = io_buffer(m, io, index);
  return b ? static_cast<int>(b->shape.size()) : -1;
}

TS_API const int64_t* ts_model_shape(const ts_model* m, ts_io io, int index) {
  const auto* b = io_buffer(m, io, index);
  return b ? b->shape.data() : nullptr;
}

TS_API const char* ts_model_dtype(const ts_model* m, ts_io io, int index) {
  return io_buffer(m, io, index) ? m->dtypes[io][index].c_str() : nullptr;
}

TS_API size_t ts_model_bytes(const ts_model* m, ts_io io, int index) {
  const auto* b = io_buffer(m, io, index);
  return b ? static_cast<size_t>(b->bytes()) : 0;
}

TS_API int ts_model_set_threads(int threads) {
  halide_set_num_threads(threads > 0 ? threads : 0);
  ts::set_spinning_pool_threads(threads);
  return 0;
}

TS_API int ts_model_run(ts_model* m, const void* const* inputs, void* const* outputs) {
  if (!m) return fail("null model");
  take_halide_errors();
  try {
    m->executor->run(inputs, outputs);
    return 0;
  } catch (const std::exception& e) {
    const std::string why = take_halide_errors();
    return fail(std::string(e.what()) + (why.empty() ? "" : ": " + why));
  }
}

TS_API const char* ts_model_version(void) { return ts_artifact::kVersion; }
