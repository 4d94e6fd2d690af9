// Property test of the schedule space: every schedule the sampler draws for real workloads
// (small ONNX models covering conv with padding and stride, depthwise conv, pooling, gemm,
// softmax, elementwise, a slice of a transpose; and a chain the layout plan stores NCHW16c) applies, compiles and computes
// what the default schedule computes, and so
// does every sketch point (schedule/sketch.h) drawn or mutated for them,
// measured through the Measurer (worker processes, output compared with rtol 1e-3).
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "analysis/pipeline_view.h"
#include "graph/layout_plan.h"
#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "schedule/schedule_space.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

using test::OnnxBuilder;
using test::rand_f32;

std::vector<std::string> property_models() {
  std::vector<std::string> paths;
  {  // conv 3x3 pad 1 stride 1 + bias + relu
    OnnxBuilder b;
    b.input("x", DType::Float32, {1, 8, 14, 14})
        .initializer("w", rand_f32({16, 8, 3, 3}, 1))
        .initializer("b", rand_f32({16}, 2))
        .node("Conv", {"x", "w", "b"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
        .node("Relu", {"c"}, {"y"})
        .output("y");
    paths.push_back(b.save("conv.onnx"));
  }
  {  // conv 3x3 stride 2 (reads part of the padded input), residual add
    OnnxBuilder b;
    b.input("x", DType::Float32, {1, 8, 15, 15})
        .input("r", DType::Float32, {1, 12, 8, 8})
        .initializer("w", rand_f32({12, 8, 3, 3}, 3))
        .node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}})
        .node("Add", {"c", "r"}, {"y"})
        .output("y");
    paths.push_back(b.save("conv_s2.onnx"));
  }
  {  // depthwise 3x3 + clip (ReLU6)
    OnnxBuilder b;
    b.input("x", DType::Float32, {1, 16, 10, 10})
        .initializer("w", rand_f32({16, 1, 3, 3}, 4))
        .node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{16}}})
        .node("Relu", {"c"}, {"y"})
        .output("y");
    paths.push_back(b.save("depthwise.onnx"));
  }
  {  // max pool 3x3 stride 2 pad 1
    OnnxBuilder b;
    b.input("x", DType::Float32, {1, 8, 13, 13})
        .node("MaxPool", {"x"}, {"y"},
              {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
               {"strides", std::vector<int64_t>{2, 2}}})
        .output("y");
    paths.push_back(b.save("maxpool.onnx"));
  }
  {  // gemm with transposed B + bias
    OnnxBuilder b;
    b.input("x", DType::Float32, {9, 40})
        .initializer("w", rand_f32({24, 40}, 5))
        .initializer("b", rand_f32({24}, 6))
        .node("Gemm", {"x", "w", "b"}, {"y"}, {{"transB", int64_t{1}}})
        .output("y");
    paths.push_back(b.save("gemm.onnx"));
  }
  {  // a transpose of which a slice keeps 1 of 13 rows: a root transpose computes only that row,
     // and a tile of more rows would shift inwards to read before the input's start
    auto i64 = [](std::vector<int64_t> v) {
      Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
      std::copy(v.begin(), v.end(), t.data<int64_t>());
      return t;
    };
    OnnxBuilder b;
    b.input("x", DType::Float32, {2, 13, 20, 6})
        .initializer("starts", i64({1, 0}))
        .initializer("ends", i64({5, 1}))
        .initializer("axes", i64({0, 1}))
        .node("Transpose", {"x"}, {"t"}, {{"perm", std::vector<int64_t>{3, 1, 0, 2}}})
        .node("Slice", {"t", "starts", "ends", "axes"}, {"y"})
        .output("y");
    paths.push_back(b.save("transpose_slice.onnx"));
  }
  {  // softmax over the last axis
    OnnxBuilder b;
    b.input("x", DType::Float32, {6, 37}).node("Softmax", {"x"}, {"y"}, {{"axis", int64_t{-1}}}).output("y");
    paths.push_back(b.save("softmax.onnx"));
  }
  return paths;
}

// A chain whose inner tensors the layout plan blocks (NCHW16c): workloads that write blocked
// (conv from a plain input), read and write blocked (3x3 conv, max pool) and read blocked
// (a conv writing the plain graph output).
std::string blocked_chain_model() {
  OnnxBuilder b;
  b.input("x", DType::Float32, {1, 8, 10, 10})
      .initializer("w0", rand_f32({16, 8, 1, 1}, 7))
      .initializer("w1", rand_f32({16, 16, 3, 3}, 8))
      .initializer("b1", rand_f32({16}, 9))
      .initializer("w2", rand_f32({8, 16, 1, 1}, 10))
      .node("Conv", {"x", "w0"}, {"c0"})
      .node("Relu", {"c0"}, {"r0"})
      .node("Conv", {"r0", "w1", "b1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c1"}, {"r1"})
      .node("MaxPool", {"r1"}, {"p"},
            {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Conv", {"p", "w2"}, {"y"})
      .output("y");
  return b.save("blocked_chain.onnx");
}

TEST(ScheduleSpaceProperty, EverySampledScheduleCompilesAndMatchesTheDefault) {
  constexpr int kDrawsPerWorkload = 34;
  constexpr int kSketchDrawsPerWorkload = 8;
  SpaceOptions sopts;
  sopts.vector_bytes = native_vector_bytes(Halide::get_host_target());
  MeasureOptions mopts;
  mopts.repeats = 1;
  mopts.warmup = 0;
  mopts.run_timeout_s = 60;
  // The property is "compiles and is correct", not "compiles fast": a few uniform draws (many
  // unrolled, unvectorized loops) take tens of seconds to compile on a loaded 2-core machine.
  mopts.compile_timeout_s = 600;
  mopts.cache_root = (test::temp_dir() / "cache").string();
  int drawn = 0, workloads = 0, sketched = 0;
  double slowest_compile = 0;
  std::vector<std::pair<std::string, bool>> models;  // (path, plan blocked layouts)
  for (const auto& path : property_models()) models.emplace_back(path, false);
  models.emplace_back(blocked_chain_model(), true);
  for (const auto& [path, blocked] : models) {
    Graph g = test::import_model(path);
    if (blocked) ASSERT_GT(plan_layouts(g, 16).blocked_activations, 0) << path;
    for (const auto& w : partition_graph(g).workloads) {
      workloads++;
      // Fewer uniform draws where blocked: a heavily unrolled one compiled for 318 s on 2 loaded cores.
      const int draws = blocked ? kDrawsPerWorkload / 6 : kDrawsPerWorkload;
      ScheduleSpace space(build_pipeline_view(lower_workload(w).outputs), space_options_for(w, sopts));
      Measurer m(w, mopts);
      ASSERT_TRUE(m.reference().valid()) << path << ": " << m.reference().error_message;
      std::mt19937_64 rng(1234 + workloads);
      std::vector<Schedule> batch;
      for (int k = 0; k < draws; k++) batch.push_back(space.sample(rng));
      // Sketch points (schedule/sketch.h) and their one-knob mutations, where a sketch applies.
      if (const Sketch* sk = space.sketch()) {
        sketched++;
        for (int k = 0; k < kSketchDrawsPerWorkload; k++) {
          const SketchKnobs knobs = sk->draw(rng);
          batch.push_back(sk->build(space, knobs));
          if (k % 2) batch.push_back(sk->build(space, sk->mutate(knobs, rng)));
        }
      }
      auto results = m.measure_batch(batch);
      for (size_t k = 0; k < batch.size(); k++, drawn++) {
        slowest_compile = std::max(slowest_compile, results[k].compile_seconds);
        EXPECT_TRUE(results[k].valid()) << path << " workload " << w.name << ": " << results[k].error_kind << ": "
                                        << results[k].error_message << "\n"
                                        << batch[k].to_halide_source();
      }
    }
  }
  EXPECT_GE(drawn, 200);
  EXPECT_GE(sketched, 8);  // conv, strided conv + add, depthwise conv, pooling, gemm, and the blocked convs and pool
  std::cout << drawn << " sampled schedules of " << workloads << " workloads (" << sketched
            << " with a sketch) compiled, ran and matched the default; slowest compile " << slowest_compile << " s\n";
}

}  // namespace
}  // namespace ts
