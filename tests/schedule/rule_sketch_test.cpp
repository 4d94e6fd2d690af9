// The default rule's knobs (the parameters of its schedules' origin) and their space: parameters
// round-trip and are validated, canonical() keeps exactly the knobs that change the tile, and
// variants drawn for a channel-blocked conv and a plain matmul compile and compute what the
// rule computes (measured through the Measurer, whose reference is the rule).
#include "schedule/rule_sketch.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "schedule/autoscheduler.h"
#include "schedule/schedule_space.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

// The knob space of a workload's unscheduled pipeline, for this machine.
RuleSketch knob_space(const Workload& w) { return RuleSketch(lower_workload(w).outputs, host_code_target()); }

TEST(DefaultKnobs, ParamsRoundTripAndBadOnesAreRejectedByName) {
  DefaultKnobs k;
  k.columns = 4;
  k.tasks = 16;
  k.unroll = 0;
  const auto params = k.params();
  EXPECT_EQ(params.size(), 3u);
  EXPECT_EQ(params.at("columns"), "4");
  EXPECT_EQ(DefaultKnobs::from_params(params), k);
  EXPECT_FALSE(check_recipe(AutoschedulerRecipe{kDefaultRecipeName, params}));

  auto why = check_default_params({{"colums", "4"}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("colums"), std::string::npos) << *why;
  EXPECT_NE(why->find("columns"), std::string::npos) << *why;  // the known ones listed
  EXPECT_TRUE(check_default_params({{"columns", "0"}}));       // below its range
  EXPECT_TRUE(check_default_params({{"blocks", "x"}}));        // not an integer
  EXPECT_TRUE(check_default_params({{"grain", "4.5"}}));
  EXPECT_THROW(DefaultKnobs::from_params({{"tasks", "1000"}}), Error);
  EXPECT_TRUE(check_recipe(AutoschedulerRecipe{kDefaultRecipeName, {{"vectors", "9"}}}));
}

// `workloads --knobs` and bench_knob_sweep read knobs as JSON: strings or numbers; anything else
// is an error that quotes the text.
TEST(DefaultKnobs, FromJsonReadsParametersAndRejectsBadText) {
  EXPECT_EQ(DefaultKnobs::from_json(""), DefaultKnobs{});
  DefaultKnobs k;
  k.chunk = 8;
  k.columns = 7;
  EXPECT_EQ(DefaultKnobs::from_json(R"({"chunk":"8","columns":7})"), k);
  for (const std::string bad : {"{", "[1, 2]", R"({"chunk":"99"})", R"({"chunks":"8"})"}) {
    EXPECT_TRUE(test::throws_naming<Error>([&] { DefaultKnobs::from_json(bad); }, {bad}));
  }
}

TEST(RuleSketch, CanonicalKeepsOnlyKnobsThatChangeTheTile) {
  // 64 -> 64 channels on 14 x 14, blocked by 16: the rule's tile is 7 columns x 2 blocks.
  if (native_vector_bytes(host_code_target()) != 64) GTEST_SKIP() << "the tile arithmetic below is AVX-512's (16 lanes)";
  const RuleSketch space = knob_space(test::conv_relu_workload(test::save_conv_chain("knobs.onnx", 8, 64, 64, 14, 14)));
  ASSERT_FALSE(space.empty()) << space.describe();
  EXPECT_EQ(space.canonical({}), DefaultKnobs{});
  DefaultKnobs k;
  k.columns = 7;  // the rule's own choice
  k.vectors = 3;  // only plain tiles have vectors
  k.tasks = 8;    // the rule's task count
  EXPECT_EQ(space.canonical(k), DefaultKnobs{}) << space.describe();
  k = {};
  k.columns = 4;
  EXPECT_EQ(space.canonical(k).columns, 4);
  k.columns = 16;  // 14 columns at most, and 2 blocks x 12 columns fill the 24 accumulators
  EXPECT_EQ(space.canonical(k).columns, 12);
  k = {};
  k.blocks = 1;
  k.unroll = 0;
  const DefaultKnobs c = space.canonical(k);
  EXPECT_EQ(c.blocks, 1);
  EXPECT_EQ(c.unroll, 0);
  EXPECT_EQ(space.canonical(c), c);  // canonical twice is canonical once

  std::mt19937_64 rng(3);
  std::set<std::string> distinct;
  for (int i = 0; i < 40; i++) {
    const DefaultKnobs d = space.draw(rng);
    EXPECT_EQ(space.canonical(d), d);
    const DefaultKnobs m = space.mutate(d, rng);
    EXPECT_EQ(space.canonical(m), m);
    distinct.insert(space.schedule(d).hash());
  }
  EXPECT_GT(distinct.size(), 20u);
  // A variant is the rule's data; its origin keeps the knobs through JSON.
  const Schedule v = space.schedule(c);
  EXPECT_FALSE(v.stages.empty());
  EXPECT_FALSE(v.autoscheduler);
  EXPECT_EQ(rule_knobs(Schedule::from_json(v.to_json())), c);
  EXPECT_EQ(is_rule_default(v), c == DefaultKnobs{});
  EXPECT_TRUE(is_rule_default(space.schedule({})));
}

TEST(RuleSketch, PipelinesWithoutATileHaveNoKnobs) {
  // Softmax alone: no reduction feeding an elementwise output of the same domain.
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {4, 40}).node("Softmax", {"x"}, {"y"}).output("y");
  const Partition p = partition_graph(test::import_model(b.save("softmax_knobs.onnx")));
  ASSERT_EQ(p.workloads.size(), 1u);
  const RuleSketch space = knob_space(p.workloads[0]);
  EXPECT_TRUE(space.empty());
  std::mt19937_64 rng(1);
  EXPECT_EQ(space.draw(rng), DefaultKnobs{});
}

// The variant only a whole model can judge: page walks ahead where the rule prefetches the next
// task's weights (a 2048 -> 512 1x1 conv at 7 x 7, 4 MB of weights: ResNet-50's), and nothing
// where it does not (a 32-channel conv, whose weights fit in L1).
TEST(RuleSketch, NetworkVariantWalksPagesWhereTheRulePrefetchesOnly) {
  const Workload big = test::conv_relu_workload(test::save_conv_chain("network_variant_big.onnx", 64, 2048, 512, 7, 7, 1));
  const TileFacts f = test::only_tile(big);
  const TilePlan rule = plan_tile(f, {});
  const std::optional<DefaultKnobs> v = knob_space(big).network_variant();
  if (rule.prefetch_next_task) {
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->params(), (std::map<std::string, std::string>{{"prefetch", "2"}}));
    TilePlan walked = rule;
    walked.walk_pages_ahead = true;
    EXPECT_EQ(plan_tile(f, *v), walked) << "the walk is all the variant changes";
  } else {
    EXPECT_FALSE(v.has_value()) << "prefetch=2 would make a tile prefetch that the rule does not";
  }
  const Workload small = test::conv_relu_workload(test::save_conv_chain("network_variant_small.onnx", 16, 32, 32, 14, 14));
  ASSERT_FALSE(plan_tile(test::only_tile(small), {}).prefetch_next_task);
  EXPECT_FALSE(knob_space(small).network_variant().has_value());
}

// Variants of a blocked conv and of a plain matmul compile and match the rule's output.
TEST(RuleSketch, DrawnVariantsCompileAndComputeWhatTheRuleComputes) {
  MeasureOptions mo;
  mo.repeats = 1;
  mo.warmup = 0;
  mo.cache_root = (test::temp_dir() / "knobs_cache").string();
  const std::vector<Workload> workloads = {
      test::conv_relu_workload(test::save_conv_chain("knobs_variants.onnx", 8, 32, 48, 9, 11)),
      test::matmul_relu_workload()};
  for (const Workload& w : workloads) {
    const RuleSketch space = knob_space(w);
    ASSERT_FALSE(space.empty()) << w.name;
    std::mt19937_64 rng(7);
    std::vector<Schedule> batch;
    std::set<std::string> hashes;
    for (int i = 0; batch.size() < 5 && i < 50; i++) {
      Schedule s = space.schedule(space.draw(rng));
      if (!s.origin->params.empty() && hashes.insert(s.hash()).second) batch.push_back(s);
    }
    ASSERT_EQ(batch.size(), 5u) << w.name;
    Measurer m(w, mo);
    ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
    const auto results = m.measure_batch(batch);
    for (size_t i = 0; i < batch.size(); i++)
      EXPECT_TRUE(results[i].valid()) << w.name << " " << batch[i].to_json() << ": " << results[i].error_kind << ": "
                                      << results[i].error_message;
  }
}

// Records made before the rule emitted data hold the recipe "TensorschedDefault" with the knobs:
// it is read as the rule with those knobs and applied as the rule's data, to the same code.
TEST(DefaultKnobs, TheOldRecipeIsReadAsTheRuleWithItsKnobs) {
  const Workload w = test::conv_relu_workload(test::save_conv_chain("knobs_old_recipe.onnx", 8, 32, 48, 9, 11));
  DefaultKnobs k;
  k.columns = 4;
  const Schedule old = Schedule::from_json(R"({"format":1,"stages":[],"autoscheduler":{"name":"TensorschedDefault","params":{"columns":"4"}}})");
  EXPECT_EQ(rule_knobs(old), k);
  EXPECT_FALSE(is_rule_default(old));
  EXPECT_TRUE(is_rule_default(Schedule::from_json(R"({"format":1,"stages":[],"autoscheduler":{"name":"TensorschedDefault"}})")));
  EXPECT_FALSE(rule_knobs(Schedule{}));
  LoweredWorkload by_recipe = lower_workload(w), by_data = lower_workload(w);
  apply(old, by_recipe.outputs, host_code_target());
  apply(default_schedule(by_data.outputs, host_code_target(), k), by_data.outputs, host_code_target());
  EXPECT_EQ(test::renamed_statement(by_recipe), test::renamed_statement(by_data));
}

// An origin names a generator tensorsched knows, with valid parameters.
TEST(DefaultKnobs, AnOriginIsValidatedLikeTheKnobs) {
  const Workload w = test::matmul_relu_workload();
  const LoweredWorkload lw = lower_workload(w);
  Schedule s = default_schedule(lw.outputs, host_code_target(), {});
  EXPECT_EQ(s.validate(lw.outputs), std::nullopt);
  EXPECT_NE(s.to_halide_source().find("// made by rule (no parameters)"), std::string::npos) << s.to_halide_source();
  s.origin->params["columns"] = "99";
  EXPECT_NE(s.validate(lw.outputs).value_or("valid").find("knob columns must be an integer"), std::string::npos);
  s.origin = ScheduleOrigin{"ansor", {}};
  EXPECT_NE(s.validate(lw.outputs).value_or("valid").find("origin 'ansor'"), std::string::npos);
}

}  // namespace
}  // namespace ts
