// LocalBuilder on a real MatMul+Add+Relu workload: a batch compiles into the code cache it names,
// a schedule that cannot compile and a timeout are outcomes with their reasons, in job order;
// discarded code is gone.
#include "measure/local_builder.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace fs = std::filesystem;

namespace ts {
namespace {

TEST(LocalBuilder, BuildsIntoItsCacheAndReportsFailuresInOrder) {
  const Workload w = test::matmul_relu_workload();
  LocalBuilder builder(CodeCache::open_default(host_code_target(), (test::temp_dir() / "cache").string()), 2);
  EXPECT_EQ(builder.name(), "local");
  const Schedule good = test::matmul_relu_schedule(w, 8, true);
  const Schedule other = test::matmul_relu_schedule(w, 4, false);
  ScheduleFn broken = [](const std::vector<Halide::Func>&, const Halide::Target&) {
    throw std::runtime_error("this schedule cannot be applied");
  };
  std::vector<CompileJob> jobs = {{&w, schedule_fn(good), good.hash(), {}},
                                  {&w, broken, "broken", {}},
                                  {&w, schedule_fn(other), other.hash(), {}}};
  const std::vector<CompileOutcome> out = builder.build(jobs, 120);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].error, "");
  EXPECT_GT(out[0].seconds, 0);
  EXPECT_NE(out[1].error.find("this schedule cannot be applied"), std::string::npos) << out[1].error;
  EXPECT_EQ(out[2].error, "");
  EXPECT_TRUE(builder.cache().has_entry(w, good.hash()));
  EXPECT_TRUE(builder.has(w, other.hash()));
  EXPECT_FALSE(fs::exists(builder.cache().object_path(w, "broken")));
  EXPECT_FALSE(builder.has(w, "broken"));
  builder.discard(w, other.hash());
  EXPECT_FALSE(builder.has(w, other.hash()));
  EXPECT_FALSE(fs::exists(builder.cache().object_path(w, other.hash())));
  EXPECT_TRUE(builder.has(w, good.hash())) << "only what was discarded is gone";

  const Schedule third = test::matmul_relu_schedule(w, 16, true);
  const std::vector<CompileOutcome> late = builder.build({{&w, schedule_fn(third), third.hash(), {}}}, 0.001);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_NE(late[0].error.find("timed out"), std::string::npos) << late[0].error;
}

}  // namespace
}  // namespace ts
