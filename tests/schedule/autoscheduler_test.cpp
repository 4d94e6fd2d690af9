// Halide's autoschedulers as Schedule recipes: JSON and hash, validation, and on the workloads
// of a small CNN (Conv+Relu, MaxPool, Reshape, Gemm, Softmax) the same results as the default
// schedule, through JIT and through compile_workload's code cache.
#include "schedule/autoscheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>

#include "graph/error.h"
#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "schedule/default_schedule.h"
#include "schedule/schedule.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

using test::OnnxBuilder;

Schedule recipe(const std::string& name, std::map<std::string, std::string> params = {}) {
  Schedule s;
  s.autoscheduler = AutoschedulerRecipe{name, std::move(params)};
  return s;
}

std::string error_of(const std::function<void()>& f) { return test::error_message<Error>(f); }

// Tiny shapes: the autoschedulers' search time grows with the pipeline, not the data.
std::vector<Workload> cnn_workloads() {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 3, 10, 10})
      .initializer("w", test::rand_f32({8, 3, 3, 3}, 1))
      .initializer("bias", test::rand_f32({8}, 2))
      .initializer("fc", test::rand_f32({5, 8 * 5 * 5}, 7))
      .initializer("shape", Tensor::from_i64({1, -1}, {2}))
      .node("Conv", {"x", "w", "bias"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"r"})
      .node("MaxPool", {"r"}, {"p"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Reshape", {"p", "shape"}, {"f"})
      .node("Gemm", {"f", "fc"}, {"logits"}, {{"transB", int64_t{1}}})
      .node("Softmax", {"logits"}, {"y"})
      .output("y");
  Graph g = test::import_model(b.save("cnn.onnx"));
  return partition_graph(g).workloads;
}

// The workload's output on fixed inputs after `schedule` runs on its freshly lowered Funcs.
Halide::Buffer<float> realize(const Workload& w, const std::function<void(const std::vector<Halide::Func>&)>& schedule) {
  LoweredWorkload lw = lower_workload(w);
  schedule(lw.outputs);
  for (size_t i = 0; i < w.graph.inputs.size(); i++) {
    const Shape& shape = w.graph.tensor(w.graph.inputs[i]).shape;
    Halide::Buffer<float> buf(std::vector<int>(shape.rbegin(), shape.rend()));
    int k = 0;
    buf.for_each_value([&](float& v) { v = static_cast<float>((k++ * 7 + static_cast<int>(i) * 3) % 13) / 4.0f - 1.5f; });
    lw.params[i].set(buf);
  }
  const Shape& oshape = w.graph.tensor(w.graph.outputs[0]).shape;
  return lw.pipeline.realize(std::vector<int>(oshape.rbegin(), oshape.rend()));
}

// Whether any definition of the pipeline's Funcs has a split or a vectorized, parallel or
// unrolled loop: the autoscheduler scheduled the Funcs themselves, not only printed source.
bool has_loop_schedule(const std::vector<Halide::Func>& outputs) {
  auto scheduled = [](const Halide::Internal::StageSchedule& s) {
    if (!s.splits().empty()) return true;
    for (const auto& d : s.dims())
      if (d.for_type != Halide::Internal::ForType::Serial) return true;
    return false;
  };
  for (const auto& o : outputs) {
    auto env = Halide::Internal::find_transitive_calls(o.function());
    env.emplace(o.name(), o.function());
    for (const auto& [name, fn] : env) {
      if (scheduled(fn.definition().schedule())) return true;
      for (const auto& u : fn.updates())
        if (scheduled(u.schedule())) return true;
    }
  }
  return false;
}

// JSON round trip, validation, the default schedule's results on every workload (JIT), and the
// first workload compiled through the code cache.
void check_recipe_on_cnn(const Schedule& s) {
  const Schedule back = Schedule::from_json(s.to_json());
  EXPECT_EQ(back, s);
  EXPECT_EQ(back.hash(), s.hash());
  const Halide::Target host = host_code_target();
  const std::vector<Workload> workloads = cnn_workloads();
  ASSERT_EQ(workloads.size(), 5u);
  for (const Workload& w : workloads) {
    SCOPED_TRACE(w.name);
    {
      LoweredWorkload lw = lower_workload(w);
      auto why = s.validate(lw.outputs);
      EXPECT_EQ(why, std::nullopt) << *why;
    }
    Halide::Buffer<float> want = realize(w, [&](const auto& outs) { apply_default_schedule(outs, host); });
    Halide::Buffer<float> got;
    try {
      got = realize(w, [&](const auto& outs) {
        apply(s, outs, host);
        if (&w == &workloads[0]) EXPECT_TRUE(has_loop_schedule(outs)) << "the Conv workload's Funcs are unscheduled";
      });
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    ASSERT_EQ(got.number_of_elements(), want.number_of_elements());
    float worst = 0;
    want.for_each_element([&](const int* pos) {
      worst = std::max(worst, std::abs(got(pos) - want(pos)) / std::max(1.0f, std::abs(want(pos))));
    });
    EXPECT_LE(worst, 1e-5f);
    std::cout << w.name << ": largest relative difference to the default schedule " << worst << "\n";
  }
  CodeCache cache = CodeCache::open_default(host, (test::temp_dir() / "cache").string());
  compile_workload(workloads[0], schedule_fn(s), s.hash(), cache);
  EXPECT_TRUE(std::filesystem::exists(cache.object_path(workloads[0], s.hash())));
}

TEST(Autoscheduler, Adams2019BeamSearch) { check_recipe_on_cnn(recipe("Adams2019", {{"parallelism", "2"}})); }

TEST(Autoscheduler, Adams2019Greedy) { check_recipe_on_cnn(recipe("Adams2019", {{"beam_size", "1"}})); }

TEST(Autoscheduler, Li2018) { check_recipe_on_cnn(recipe("Li2018")); }

TEST(Autoscheduler, Mullapudi2016) { check_recipe_on_cnn(recipe("Mullapudi2016", {{"parallelism", "2"}})); }

TEST(Autoscheduler, RecipeJsonHashAndSource) {
  const Schedule s = recipe("Adams2019", {{"beam_size", "1"}, {"random_dropout_seed", "3"}});
  EXPECT_EQ(s.to_json(),
            R"({"autoscheduler":{"name":"Adams2019","params":{"beam_size":"1","random_dropout_seed":"3"}},"format":1,"stages":[]})");
  EXPECT_EQ(Schedule::from_json(s.to_json(2)), s);
  EXPECT_EQ(Schedule::from_json(R"({"format":1,"stages":[],"autoscheduler":{"name":"Li2018"}})"), recipe("Li2018"));
  EXPECT_NE(s.hash(), recipe("Adams2019").hash());
  EXPECT_NE(recipe("Adams2019").hash(), recipe("Li2018").hash());
  EXPECT_NE(recipe("Li2018").hash(), Schedule().hash());
  EXPECT_EQ(Schedule().to_json(), R"({"format":1,"stages":[]})");  // no recipe: the key is left out
  EXPECT_TRUE(s.is_complete({"anything"}));
  EXPECT_EQ(s.to_halide_source(), "// autoscheduler Adams2019 (beam_size=1, random_dropout_seed=3)\n");
  EXPECT_EQ(recipe("Li2018").to_halide_source(), "// autoscheduler Li2018 (default parameters)\n");

  auto parse_error = [](const std::string& text) { return error_of([&] { Schedule::from_json(text); }); };
  EXPECT_NE(parse_error(R"({"format":1,"stages":[],"autoscheduler":{"params":{}}})").find("missing field 'name'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"format":1,"stages":[],"autoscheduler":{"name":"Li2018","params":{"parallelism":4}}})")
                .find("parameter 'parallelism' must be a string"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"format":1,"stages":[],"autoscheduler":{"name":"Li2018","seed":1}})").find("unknown field 'seed'"),
            std::string::npos);
}

TEST(Autoscheduler, RejectsUnknownNamesParametersAndStages) {
  LoweredWorkload lw = lower_workload(cnn_workloads()[0]);
  auto why = [&](const Schedule& s) { return s.validate(lw.outputs).value_or("valid"); };
  EXPECT_NE(why(recipe("Ansor")).find("unknown autoscheduler 'Ansor'"), std::string::npos) << why(recipe("Ansor"));
  EXPECT_NE(why(recipe("Li2018", {{"beam_size", "4"}})).find("Li2018 has no parameter 'beam_size'"), std::string::npos);
  EXPECT_NE(why(recipe("Adams2019", {{"beam_size", "0"}})).find("parameter 'beam_size' is '0'"), std::string::npos);
  EXPECT_NE(why(recipe("Adams2019", {{"random_dropout", "50.5"}})).find("integer percentage"), std::string::npos);
  EXPECT_NE(why(recipe("Adams2019", {{"weights_path", "/nonexistent/w.weights"}})).find("no file or directory"),
            std::string::npos);
  Schedule both = recipe("Li2018");
  StageSchedule root;
  root.func = "output_Y";
  root.placement = Placement::Root;
  both.set(root);
  EXPECT_NE(why(both).find("decided stage(s) and an autoscheduler recipe"), std::string::npos) << why(both);
  // apply() refuses before running anything.
  EXPECT_NE(error_of([&] { apply(recipe("Ansor"), lw.outputs, host_code_target()); }).find("invalid schedule"),
            std::string::npos);

  // The autoschedulers need estimates: a Func without any is named.
  Halide::Func f("no_estimates");
  Halide::Var x("x");
  f(x) = x * 2;
  EXPECT_NE(recipe("Mullapudi2016").validate({f}).value_or("valid").find("output 'no_estimates' has no estimate"),
            std::string::npos);
  Halide::ImageParam in(Halide::Float(32), 1, "in_without_estimates");
  Halide::Func g("g");
  g(x) = in(x);
  g.set_estimate(x, 0, 8);
  EXPECT_NE(recipe("Mullapudi2016").validate({g}).value_or("valid").find("input 'in_without_estimates'"), std::string::npos);
}

TEST(Autoscheduler, PluginDirectoryFromEnvironmentComesFirst) {
  const std::string found = find_autoscheduler_plugin("Li2018");
  ASSERT_FALSE(found.empty()) << "no libautoschedule_li2018.so found";
  const auto dir = test::temp_dir() / "plugins";
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink(found, dir / "libautoschedule_li2018.so");
  const char* old = std::getenv("TENSORSCHED_HALIDE_PLUGIN_DIR");
  const std::string saved = old ? old : "";
  setenv("TENSORSCHED_HALIDE_PLUGIN_DIR", ("/nonexistent:" + dir.string()).c_str(), 1);
  EXPECT_EQ(find_autoscheduler_plugin("Li2018"), (dir / "libautoschedule_li2018.so").string());
  EXPECT_EQ(autoscheduler_plugin_dirs().at(0), "/nonexistent");
  if (old) setenv("TENSORSCHED_HALIDE_PLUGIN_DIR", saved.c_str(), 1);
  else unsetenv("TENSORSCHED_HALIDE_PLUGIN_DIR");
}

// The schedule Adams2019 prints for the Conv+Relu workload under `params`.
std::string adams_source(const Workload& w, std::map<std::string, std::string> params) {
  LoweredWorkload lw = lower_workload(w);
  return run_autoscheduler(AutoschedulerRecipe{"Adams2019", std::move(params)}, lw.outputs, host_code_target());
}

TEST(Autoscheduler, Adams2019Replays) {
  const Workload w = cnn_workloads()[0];
  const std::map<std::string, std::string> params{{"beam_size", "4"}, {"parallelism", "2"}};
  const std::string first = adams_source(w, params);
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(adams_source(w, params), first);
  // Its environment is the recipe's, and the caller's is restored.
  setenv("HL_BEAM_SIZE", "1", 1);
  EXPECT_EQ(adams_source(w, params), first);
  EXPECT_STREQ(std::getenv("HL_BEAM_SIZE"), "1");
  unsetenv("HL_BEAM_SIZE");
  // Random dropout is read once per process by the plugin: another value needs a fresh process.
  EXPECT_NE(error_of([&] { adams_source(w, {{"random_dropout", "50"}}); }).find("needs a fresh process"), std::string::npos);
}

// Prints whether one dropout seed replays and whether two seeds differ, then exits.
[[noreturn]] void report_dropout_seeds(const Workload& w) {
  auto source = [&](const char* seed) {
    return adams_source(w, {{"beam_size", "8"}, {"random_dropout", "50"}, {"random_dropout_seed", seed}});
  };
  const std::string a = source("1"), again = source("1");
  // Two seeds may happen to keep the same choices on a small pipeline: some other seed must differ.
  bool differs = false;
  for (const char* seed : {"2", "3", "4", "5", "6"}) differs = differs || source(seed) != a;
  std::cerr << (a == again ? "REPLAYS" : "DOES NOT REPLAY") << " " << (differs ? "DIFFERENT" : "SAME") << std::endl;
  std::exit(0);
}

// In a fresh process (the plugin reads the dropout once per process): the same seed replays,
// and other seeds give other schedules.
TEST(Autoscheduler, Adams2019DropoutSeeds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Workload w = test::zoo_workloads("resnet18.onnx")[1];  // a 3x3 conv: enough choices for seeds to matter
  EXPECT_EXIT(report_dropout_seeds(w), ::testing::ExitedWithCode(0), "REPLAYS DIFFERENT");
}

}  // namespace
}  // namespace ts
