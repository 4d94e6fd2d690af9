// Evicting weights before a measured run: the bytes survive the flush, and a workload with
// weights measures (and checks its outputs) with its weights evicted and left cached alike.
#include "measure/cache_flush.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "measure/measurer.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

TEST(CacheFlush, EvictionKeepsTheBytes) {
  std::vector<float> v(100003);
  std::iota(v.begin(), v.end(), 0.5f);
  evict_from_caches(reinterpret_cast<const char*>(v.data()) + 3, v.size() * sizeof(float) - 7);  // unaligned ends
  evict_from_caches(nullptr, 0);
  for (size_t i = 0; i < v.size(); i++) ASSERT_EQ(v[i], static_cast<float>(i) + 0.5f);
}

TEST(CacheFlush, MeasuresWithWeightsColdOrWarm) {
  const Workload w = test::matmul_relu_workload();
  ASSERT_FALSE(w.constant_inputs.empty());  // the matmul's B is a model constant: evicted when cold
  for (bool cold : {true, false}) {
    MeasureOptions o;
    o.cache_root = (test::temp_dir() / "cache").string();
    o.compile_jobs = 2;
    o.repeats = 3;
    o.cold_weights = cold;
    Measurer m(w, o);
    const MeasureResult& ref = m.reference();
    ASSERT_TRUE(ref.valid()) << ref.error_message;
    EXPECT_EQ(ref.times.size(), 3u);
    const auto results = m.measure_batch({test::matmul_relu_schedule(w, 8, true)});
    ASSERT_TRUE(results[0].valid()) << results[0].error_kind << ": " << results[0].error_message;
    EXPECT_GT(results[0].median, 0);
  }
}

}  // namespace
}  // namespace ts
