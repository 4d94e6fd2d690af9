#include "support/small_workloads.h"

#include <gtest/gtest.h>

#include "analysis/pipeline_view.h"
#include "graph/layout_plan.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/winograd.h"
#include "measure/workload_compiler.h"
#include "schedule/rule_sketch.h"
#include "schedule/schedule_space.h"
#include "schedule/task_prefetch.h"
#include "support/onnx_builder.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace ts::test {

namespace {

// Halide suffixes a Func name reused in one process ("f$2"); schedules name the Func without it.
std::string schedule_name(const std::string& func) { return func.substr(0, func.find('$')); }

}  // namespace

std::string save_matmul_relu_model() {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {16, 32})
      .initializer("w", rand_f32({32, 24}, 11))
      .initializer("b", rand_f32({24}, 12))
      .node("MatMul", {"x", "w"}, {"m"})
      .node("Add", {"m", "b"}, {"a"})
      .node("Relu", {"a"}, {"y"})
      .output("y");
  return b.save("matmul_relu.onnx");
}

Workload matmul_relu_workload() {
  Partition p = partition_graph(import_model(save_matmul_relu_model()));
  EXPECT_EQ(p.workloads.size(), 1u);
  return p.workloads.at(0);
}

Schedule matmul_relu_schedule(const Workload& w, int width, bool parallel) {
  PipelineView view = build_pipeline_view(lower_workload(w).outputs);
  Schedule s;
  for (const Stage& st : view.stages) {
    if (!st.is_output && st.definitions.size() < 2) continue;  // input wrappers and elementwise stay inline
    StageSchedule pure;
    pure.func = schedule_name(st.name);
    pure.placement = Placement::Root;
    pure.vectorize = st.dims.front().name;
    pure.vector_width = width;
    if (parallel && st.is_output) pure.parallel = st.dims.back().name;
    s.set(pure);
    for (size_t d = 1; d < st.definitions.size(); d++) {
      StageSchedule update;
      update.func = pure.func;
      update.definition = static_cast<int>(d);
      // The vectorized pure loop innermost, the reduction loops next, the other pure loops outside.
      std::vector<std::string> pure_loops, reduction_loops;
      for (const Loop& l : st.definitions[d].loops) (l.reduction ? reduction_loops : pure_loops).push_back(l.name);
      update.order = {pure_loops.front()};
      update.order.insert(update.order.end(), reduction_loops.begin(), reduction_loops.end());
      update.order.insert(update.order.end(), pure_loops.begin() + 1, pure_loops.end());
      update.vectorize = st.dims.front().name;
      update.vector_width = width;
      if (parallel) update.parallel = st.dims.back().name;
      s.set(update);
    }
  }
  return s;
}

Record measured_record(const Workload& w, const Schedule& s, double seconds) {
  Record r;
  r.workload = workload_entry(w);
  r.schedule_json = s.to_json();
  r.schedule_hash = s.hash();
  r.times = {seconds};
  r.policy = "test";
  return r;
}

std::vector<Workload> zoo_workloads(const std::string& file) {
  ImportOptions o;
  o.quiet = true;
  Graph g = import_onnx(std::string(TENSORSCHED_SOURCE_DIR) + "/models/" + file, o);
  run_default_passes(g);
  return partition_graph(g).workloads;
}

std::vector<Halide::Func> scaled_matmul_pipeline() {
  Halide::ImageParam a(Halide::Float(32), 2, "a"), b(Halide::Float(32), 2, "b");
  a.dim(0).set_estimate(0, 20);
  a.dim(1).set_estimate(0, 33);
  b.dim(0).set_estimate(0, 40);
  b.dim(1).set_estimate(0, 20);
  Halide::Var x("x"), y("y");
  Halide::RDom r(0, 20, "r");
  Halide::Func scaled("scaled"), acc("acc"), out("out");
  scaled(x, y) = a(x, y) * 2.0f;
  acc(x, y) = 0.0f;
  acc(x, y) += scaled(r, y) * b(x, r);
  out(x, y) = Halide::max(acc(x, y), 0.0f);
  scaled.set_estimate(x, 0, 20).set_estimate(y, 0, 33);
  acc.set_estimate(x, 0, 40).set_estimate(y, 0, 33);
  out.set_estimate(x, 0, 40).set_estimate(y, 0, 33);
  return {out};
}

Graph small_cnn() {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 3, 12, 12})
      .initializer("w", test::rand_f32({8, 3, 3, 3}, 1))
      .initializer("bias", test::rand_f32({8}, 2))
      .initializer("scale", random_tensor(DType::Float32, {8}, 3, 0.5, 1.5))
      .initializer("beta", test::rand_f32({8}, 4))
      .initializer("mean", test::rand_f32({8}, 5))
      .initializer("var", random_tensor(DType::Float32, {8}, 6, 0.5, 1.5))
      .initializer("fc", test::rand_f32({5, 8 * 6 * 6}, 7))
      .initializer("shape", Tensor::from_i64({1, -1}, {2}))
      .node("Conv", {"x", "w", "bias"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"bn"})
      .node("Relu", {"bn"}, {"r"})
      .node("MaxPool", {"r"}, {"p"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Reshape", {"p", "shape"}, {"f"})
      .node("Gemm", {"f", "fc"}, {"logits"}, {{"transB", int64_t{1}}})
      .node("Softmax", {"logits"}, {"y"})
      .output("y");
  Graph g = test::import_model(b.save("cnn.onnx"));
  return g;
}

// x -> 1x1 conv to `mid` channels -> 3x3 conv (pad 1) to `out` channels + Relu -> 1x1 conv to
// 8: the middle workload (Conv+Relu) reads and writes blocked activations.
std::string save_conv_chain(const std::string& file, int64_t in, int64_t mid, int64_t out, int64_t h, int64_t w,
                            int64_t k) {
  const int64_t pad = k / 2;
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, in, h, w})
      .initializer("w0", rand_f32({mid, in, 1, 1}, 1))
      .initializer("w1", rand_f32({out, mid, k, k}, 2))
      .initializer("w2", rand_f32({8, out, 1, 1}, 3))
      .node("Conv", {"x", "w0"}, {"a"})
      .node("Conv", {"a", "w1"}, {"c"}, {{"pads", std::vector<int64_t>{pad, pad, pad, pad}}})
      .node("Relu", {"c"}, {"r"})
      .node("Conv", {"r", "w2"}, {"y"})
      .output("y");
  return b.save(file);
}

// The Conv+Relu workload of save_conv_chain's model, its layouts planned for 16 lanes.
Workload conv_relu_workload(const std::string& path) {
  Graph g = import_model(path);
  plan_layouts(g, 16);
  for (const auto& wl : partition_graph(g).workloads)
    if (wl.name == "Conv+Relu") return wl;
  ADD_FAILURE() << path << ": no Conv+Relu workload";
  return {};
}

Workload winograd_conv_relu_workload(const std::string& file) {
  Graph g = import_model(save_conv_chain(file, 16, 32, 48, 14, 14));
  plan_layouts(g, 16);
  if (plan_winograd(g, 1) != 1) return {};
  for (const auto& wl : partition_graph(g).workloads)
    if (wl.name == "Conv+Relu") return wl;
  return {};
}

TileFacts only_tile(const Workload& w) {
  const DefaultStructure ds = default_structure(lower_workload(w).outputs, host_code_target());
  EXPECT_EQ(ds.tiles.size(), 1u) << w.name;
  return ds.tiles.at(0).facts;
}

bool host_has_avx512() { return native_vector_bytes(host_code_target()) == 64; }

Schedule rule_variant(const Workload& w, const DefaultKnobs& knobs) {
  return default_schedule(lower_workload(w).outputs, host_code_target(), knobs);
}

void expect_variants_match_rule(const Workload& w, const std::string& cache_name,
                                const std::vector<DefaultKnobs>& variants) {
  Measurer m(w, check_only_options(cache_name));
  ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
  std::vector<Schedule> schedules;
  for (const auto& k : variants) schedules.push_back(rule_variant(w, k));
  for (const auto& r : m.measure_batch(schedules)) EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;
}

MeasureOptions check_only_options(const std::string& cache_name) {
  MeasureOptions mo;
  mo.repeats = 1;
  mo.warmup = 0;
  mo.cache_root = (temp_dir() / cache_name).string();
  return mo;
}

std::string renamed_statement(LoweredWorkload& lw) {
  const Halide::Target target = host_code_target();
  add_task_prefetch_passes(lw.pipeline, lw.outputs);
  const std::string path = (temp_dir() / "stmt.txt").string();
  lw.pipeline.compile_to_lowered_stmt(path, lw.args, Halide::StmtOutputFormat::Text, target);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  // A Func's name carries a "$N" when it was made before in the process, in the C identifiers
  // made of it as "_N": both become the base name first, so a name shared by the pipeline, its
  // output buffer and its closures stays shared.
  std::string stmt = text.str();
  std::vector<std::pair<std::string, std::string>> renames;
  for (const auto& o : lw.outputs)
    for (const auto& [name, fn] : Halide::Internal::find_transitive_calls(o.function()))
      if (name.find('$') != std::string::npos) {
        std::string c_name = name;
        std::replace(c_name.begin(), c_name.end(), '$', '_');
        renames.emplace_back(name, func_base_name(name));
        renames.emplace_back(c_name, func_base_name(name));
      }
  for (const auto& o : lw.outputs)
    if (o.name().find('$') != std::string::npos) {
      std::string c_name = o.name();
      std::replace(c_name.begin(), c_name.end(), '$', '_');
      renames.emplace_back(o.name(), func_base_name(o.name()));
      renames.emplace_back(c_name, func_base_name(o.name()));
    }
  std::sort(renames.begin(), renames.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [from, to] : renames)
    for (size_t at = stmt.find(from); at != std::string::npos; at = stmt.find(from, at + to.size())) stmt.replace(at, from.size(), to);
  std::map<std::string, int> ids;
  std::string out;
  const std::regex name("[A-Za-z_][A-Za-z0-9_$.]*");
  auto last = stmt.cbegin();
  for (std::sregex_iterator it(stmt.begin(), stmt.end(), name), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    out += "n" + std::to_string(ids.emplace(it->str(), static_cast<int>(ids.size())).first->second);
    last = (*it)[0].second;
  }
  out.append(last, stmt.cend());
  return out;
}

}  // namespace ts::test
