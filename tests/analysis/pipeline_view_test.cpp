// PipelineView on hand-written Halide pipelines (stages, order, loops, edges, access matrices,
// footprints, op counts) and on a lowered ONNX Conv+Relu workload.
#include "analysis/pipeline_view.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/workload.h"
#include "lower/lower.h"
#include "measure/workload_compiler.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::RDom;
using Halide::Var;
using Coeffs = std::vector<int64_t>;

// Index of the loop named `name` in a definition, -1 when absent.
int loop_index(const Definition& d, const std::string& name) {
  for (size_t k = 0; k < d.loops.size(); k++)
    if (d.loops[k].name == name) return static_cast<int>(k);
  return -1;
}

// f(x, y) = in(x, y) * 2; g(x, y) = f(x, y) + f(x + 1, y).
struct Stencil {
  ImageParam in{Halide::Float(32), 2, "in"};
  Var x{"x"}, y{"y"};
  Func f{"f"}, g{"g"};
  explicit Stencil(bool estimates) {
    f(x, y) = in(x, y) * 2.0f;
    g(x, y) = f(x, y) + f(x + 1, y);
    g.set_estimate(x, 0, 16).set_estimate(y, 0, 8);
    if (estimates) {
      f.set_estimate(x, 0, 17).set_estimate(y, 0, 8);
      in.dim(0).set_estimate(0, 17);
      in.dim(1).set_estimate(0, 8);
    }
  }
};

TEST(PipelineView, StencilStagesEdgesAccessesAndOps) {
  Stencil p(true);
  PipelineView v = build_pipeline_view({p.g});
  ASSERT_EQ(v.stages.size(), 2u);
  EXPECT_EQ(v.stages[0].name, p.f.name());  // producers first; in's wrapper Func is folded
  EXPECT_EQ(v.stages[1].name, p.g.name());
  EXPECT_EQ(v.outputs, std::vector<std::string>{p.g.name()});
  EXPECT_FALSE(v.stages[0].is_output);
  EXPECT_TRUE(v.stages[1].is_output);

  const Stage& f = v.stages[0];
  EXPECT_EQ(f.dtype, "float32");
  EXPECT_EQ(f.bytes, 4);
  ASSERT_EQ(f.dims.size(), 2u);
  EXPECT_EQ(f.dims[0].name, "x");
  EXPECT_EQ(f.dims[0].extent, 17);
  EXPECT_EQ(f.dims[1].extent, 8);
  EXPECT_TRUE(f.dims_estimated);
  EXPECT_EQ(f.elements, 17 * 8);
  EXPECT_EQ(f.points, 17 * 8);
  ASSERT_EQ(f.definitions.size(), 1u);
  EXPECT_EQ(f.definitions[0].ops.f_mul, 1);
  EXPECT_EQ(f.definitions[0].ops.loads, 1);
  EXPECT_EQ(f.definitions[0].ops.stores, 1);
  EXPECT_EQ(f.definitions[0].ops.float_ops(), 1);
  EXPECT_EQ(f.producers, std::vector<std::string>{"in"});
  EXPECT_EQ(f.consumers, std::vector<std::string>{p.g.name()});
  EXPECT_FALSE(f.is_rename);

  ASSERT_EQ(v.inputs.size(), 1u);
  EXPECT_EQ(v.inputs[0].name, "in");
  EXPECT_TRUE(v.inputs[0].is_param);
  EXPECT_EQ(v.inputs[0].elements, 17 * 8);
  EXPECT_EQ(v.inputs[0].consumers, std::vector<std::string>{p.f.name()});
  EXPECT_EQ(v.inputs[0].wrapper.rfind("in_im", 0), 0u);

  ASSERT_EQ(v.edges.size(), 2u);
  const Edge* in_f = v.edge("in", p.f.name());
  ASSERT_NE(in_f, nullptr);
  EXPECT_TRUE(in_f->producer_is_input);
  ASSERT_EQ(in_f->accesses.size(), 1u);
  EXPECT_EQ(in_f->accesses[0].dims[0].coeffs, (Coeffs{1, 0}));
  EXPECT_EQ(in_f->accesses[0].dims[1].coeffs, (Coeffs{0, 1}));
  EXPECT_EQ(in_f->footprint_elements, 17 * 8);
  EXPECT_EQ(in_f->loads, 17 * 8);

  const Edge* f_g = v.edge(p.f.name(), p.g.name());
  ASSERT_NE(f_g, nullptr);
  EXPECT_FALSE(f_g->producer_is_input);
  ASSERT_EQ(f_g->accesses.size(), 2u);  // f(x, y) and f(x + 1, y)
  std::vector<int64_t> offsets;
  for (const auto& a : f_g->accesses) {
    ASSERT_EQ(a.dims.size(), 2u);
    EXPECT_TRUE(a.dims[0].affine);
    EXPECT_EQ(a.dims[0].coeffs, (Coeffs{1, 0}));
    EXPECT_EQ(a.dims[1].coeffs, (Coeffs{0, 1}));
    EXPECT_EQ(a.dims[1].constant, 0);
    offsets.push_back(a.dims[0].constant);
  }
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(f_g->footprint.size(), 2u);
  EXPECT_EQ(f_g->footprint[0].min, 0);
  EXPECT_EQ(f_g->footprint[0].extent, 17);  // x in [0, 16) plus one
  EXPECT_EQ(f_g->footprint[1].extent, 8);
  EXPECT_TRUE(f_g->footprint_exact);
  EXPECT_EQ(f_g->footprint_elements, 17 * 8);
  EXPECT_EQ(f_g->loads, 2 * 16 * 8);

  const OpHistogram& gops = v.stages[1].definitions[0].ops;
  EXPECT_EQ(gops.f_add, 1);
  EXPECT_EQ(gops.i_add, 1);  // x + 1
  EXPECT_EQ(gops.loads, 2);
  EXPECT_EQ(gops.stores, 1);
  EXPECT_EQ(v.total_points(), 17 * 8 + 16 * 8);
}

TEST(PipelineView, ExtentsFromConsumersWithoutEstimates) {
  Stencil p(false);
  PipelineView v = build_pipeline_view({p.g});
  const Stage* f = v.stage(p.f.name());
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->dims_estimated);
  EXPECT_EQ(f->dims[0].extent, 17);
  EXPECT_EQ(f->dims[1].extent, 8);
  EXPECT_EQ(f->points, 17 * 8);
  const InputTensor* in = v.input("in");
  ASSERT_NE(in, nullptr);
  EXPECT_FALSE(in->dims_estimated);
  EXPECT_EQ(in->elements, 17 * 8);
  EXPECT_TRUE(v.stage(p.g.name())->dims_estimated);
}

// m(x, y) = sum_r a(r, y) * b(x, r); out = m + bias(x) + s(0, y); y2 renames out.
TEST(PipelineView, MatmulReductionTransposeAndBroadcast) {
  const int K = 32, M = 8, N = 16;
  ImageParam a(Halide::Float(32), 2, "a"), b(Halide::Float(32), 2, "b");
  ImageParam bias(Halide::Float(32), 1, "bias"), s(Halide::Float(32), 2, "s");
  a.dim(0).set_estimate(0, K), a.dim(1).set_estimate(0, M);
  b.dim(0).set_estimate(0, N), b.dim(1).set_estimate(0, K);
  bias.dim(0).set_estimate(0, N);
  s.dim(0).set_estimate(0, 1), s.dim(1).set_estimate(0, M);
  Var x("x"), y("y");
  RDom r(0, K, "r");
  Func m("m"), out("out"), y2("y2");
  m(x, y) = 0.0f;
  m(x, y) += a(r, y) * b(x, r);
  out(x, y) = m(x, y) + bias(x) + s(0, y);
  y2(x, y) = out(x, y);
  for (Func* fn : {&m, &out, &y2}) fn->set_estimate(x, 0, N).set_estimate(y, 0, M);

  PipelineView v = build_pipeline_view({y2});
  ASSERT_EQ(v.stages.size(), 3u);
  EXPECT_EQ(v.stages[0].name, m.name());
  EXPECT_EQ(v.stages[1].name, out.name());
  EXPECT_EQ(v.stages[2].name, y2.name());
  EXPECT_TRUE(v.stages[2].is_rename);
  EXPECT_EQ(v.stages[2].rename_of, out.name());
  EXPECT_FALSE(v.stages[1].is_rename);
  ASSERT_EQ(v.inputs.size(), 4u);
  EXPECT_EQ(v.inputs[0].name, "a");  // by name
  EXPECT_EQ(v.inputs[3].name, "s");

  const Stage& ms = v.stages[0];
  ASSERT_EQ(ms.definitions.size(), 2u);
  const Definition& init = ms.definitions[0];
  const Definition& upd = ms.definitions[1];
  EXPECT_EQ(init.points, N * M);
  EXPECT_EQ(init.ops.stores, 1);
  EXPECT_EQ(init.ops.loads, 0);
  ASSERT_EQ(upd.loops.size(), 3u);  // x, y, then the reduction loop
  EXPECT_EQ(upd.loops[0].name, "x");
  EXPECT_EQ(upd.loops[1].name, "y");
  EXPECT_EQ(upd.loops[2].name, r.x.name());
  EXPECT_TRUE(upd.loops[2].reduction);
  EXPECT_FALSE(upd.loops[0].reduction);
  EXPECT_EQ(upd.loops[2].extent, K);
  EXPECT_EQ(upd.points, N * M * K);
  EXPECT_EQ(ms.points, N * M + N * M * K);
  EXPECT_EQ(ms.elements, N * M);
  EXPECT_EQ(upd.ops.f_add, 1);
  EXPECT_EQ(upd.ops.f_mul, 1);
  EXPECT_EQ(upd.ops.loads, 3);
  EXPECT_EQ(upd.ops.self_loads, 1);
  EXPECT_EQ(upd.ops.stores, 1);
  ASSERT_EQ(upd.store.size(), 2u);
  EXPECT_EQ(upd.store[0].coeffs, (Coeffs{1, 0, 0}));
  EXPECT_EQ(upd.store[1].coeffs, (Coeffs{0, 1, 0}));
  ASSERT_EQ(upd.self_accesses.size(), 1u);
  EXPECT_EQ(upd.self_accesses[0].dims[0].coeffs, (Coeffs{1, 0, 0}));

  // a(r, y): the reduction loop walks a's innermost dim (transposed relative to b).
  const Edge* ea = v.edge("a", m.name());
  ASSERT_NE(ea, nullptr);
  ASSERT_EQ(ea->accesses.size(), 1u);
  EXPECT_EQ(ea->accesses[0].definition, 1);
  EXPECT_EQ(ea->accesses[0].dims[0].coeffs, (Coeffs{0, 0, 1}));
  EXPECT_EQ(ea->accesses[0].dims[1].coeffs, (Coeffs{0, 1, 0}));
  EXPECT_EQ(ea->footprint_elements, K * M);
  EXPECT_EQ(ea->loads, N * M * K);
  const Edge* eb = v.edge("b", m.name());
  ASSERT_NE(eb, nullptr);
  EXPECT_EQ(eb->accesses[0].dims[0].coeffs, (Coeffs{1, 0, 0}));
  EXPECT_EQ(eb->accesses[0].dims[1].coeffs, (Coeffs{0, 0, 1}));
  EXPECT_EQ(eb->footprint_elements, N * K);

  // bias(x): no dim uses y (broadcast along y); s(0, y): dim 0 indexed by no loop.
  const Edge* eb2 = v.edge("bias", out.name());
  ASSERT_NE(eb2, nullptr);
  ASSERT_EQ(eb2->accesses[0].dims.size(), 1u);
  EXPECT_EQ(eb2->accesses[0].dims[0].coeffs, (Coeffs{1, 0}));
  EXPECT_EQ(eb2->accesses[0].dims[0].depends_on, std::vector<int>{0});
  const Edge* es = v.edge("s", out.name());
  ASSERT_NE(es, nullptr);
  const AccessDim& s0 = es->accesses[0].dims[0];
  EXPECT_TRUE(s0.affine);
  EXPECT_EQ(s0.coeffs, (Coeffs{0, 0}));
  EXPECT_TRUE(s0.depends_on.empty());
  EXPECT_EQ(s0.constant, 0);
  EXPECT_EQ(es->accesses[0].dims[1].coeffs, (Coeffs{0, 1}));
  EXPECT_EQ(es->footprint_elements, M);
  EXPECT_EQ(v.edges_into(out.name()).size(), 3u);  // bias, m, s
  EXPECT_EQ(v.edges_from(m.name()).size(), 1u);
  EXPECT_EQ(v.stages[1].definitions[0].ops.f_add, 2);
  EXPECT_EQ(v.stages[1].definitions[0].ops.loads, 3);
}

TEST(PipelineView, NonAffineAndDataDependentAccesses) {
  ImageParam in(Halide::Float(32), 2, "in"), idx(Halide::Int(32), 1, "idx");
  in.dim(0).set_estimate(0, 17), in.dim(1).set_estimate(0, 8);
  idx.dim(0).set_estimate(0, 16);
  Var x("x"), y("y");
  Func shifted("shifted"), safe("safe"), gathered("gathered"), sum("sum");
  shifted(x, y) = in(Halide::clamp(x - 1, 0, 16), y);  // the clamp binds at x = 0
  safe(x, y) = in(Halide::clamp(x, 0, 16), y);         // never binds for x in [0, 17)
  gathered(x, y) = in(idx(x), y);
  sum(x, y) = shifted(x, y) + safe(x, y) + gathered(x, y);
  for (Func* fn : {&shifted, &safe, &sum}) fn->set_estimate(x, 0, 17).set_estimate(y, 0, 8);
  gathered.set_estimate(x, 0, 16).set_estimate(y, 0, 8);

  PipelineView v = build_pipeline_view({sum});
  const Edge* e1 = v.edge("in", shifted.name());
  ASSERT_NE(e1, nullptr);
  EXPECT_FALSE(e1->accesses[0].dims[0].affine);
  EXPECT_EQ(e1->accesses[0].dims[0].depends_on, std::vector<int>{0});
  EXPECT_TRUE(e1->accesses[0].dims[1].affine);
  EXPECT_EQ(e1->footprint[0].min, 0);  // clamp(x - 1) for x in [0, 17): [0, 15]
  EXPECT_EQ(e1->footprint[0].extent, 16);
  EXPECT_TRUE(e1->footprint_exact);
  EXPECT_EQ(v.stage(shifted.name())->definitions[0].ops.i_minmax, 2);

  const Edge* e2 = v.edge("in", safe.name());
  ASSERT_NE(e2, nullptr);
  EXPECT_TRUE(e2->accesses[0].dims[0].affine);
  EXPECT_EQ(e2->accesses[0].dims[0].coeffs, (Coeffs{1, 0}));

  const Edge* e3 = v.edge("in", gathered.name());
  ASSERT_NE(e3, nullptr);
  EXPECT_FALSE(e3->accesses[0].dims[0].affine);
  EXPECT_FALSE(e3->footprint_exact);
  EXPECT_EQ(e3->footprint[0].extent, 17);  // the whole input along the gathered dim
  EXPECT_EQ(e3->footprint[1].extent, 8);
  EXPECT_EQ(v.stage(gathered.name())->definitions[0].ops.loads, 2);
  const Edge* e4 = v.edge("idx", gathered.name());
  ASSERT_NE(e4, nullptr);
  EXPECT_EQ(e4->footprint_elements, 16);
}

TEST(PipelineView, OpHistogramKinds) {
  ImageParam in(Halide::Float(32), 2, "in");
  in.dim(0).set_estimate(0, 8), in.dim(1).set_estimate(0, 8);
  Var x("x"), y("y");
  Func h("h");
  Expr v = in(x, y);
  Expr idx = Halide::cast<float>(x / 2 + (y % 3) * 5 + (x << y));
  h(x, y) = Halide::select(x > 3 && y < 2, Halide::exp(v) / (1.0f + v), idx) + Halide::sqrt(v);
  h.set_estimate(x, 0, 8).set_estimate(y, 0, 8);
  PipelineView view = build_pipeline_view({h});
  const OpHistogram& o = view.stages[0].definitions[0].ops;
  EXPECT_EQ(o.loads, 1);  // one load of in(x, y) after CSE
  EXPECT_EQ(o.f_math, 2);  // exp, sqrt
  EXPECT_EQ(o.f_div, 1);
  EXPECT_EQ(o.f_add, 2);
  EXPECT_EQ(o.f_select, 1);
  EXPECT_EQ(o.i_cmp, 2);
  EXPECT_EQ(o.bool_ops, 1);
  EXPECT_EQ(o.i_divmod, 2);
  EXPECT_EQ(o.i_mul, 1);
  EXPECT_EQ(o.i_add, 2);
  EXPECT_EQ(o.i_shift, 1);
  EXPECT_EQ(o.casts, 1);
  EXPECT_EQ(o.stores, 1);
}

// hist(clamp(in(r), 0, 9)) += 1 over the even r: no pure loop, a data-dependent store.
TEST(PipelineView, ScatterUpdateWithPredicate) {
  ImageParam in(Halide::Int(32), 1, "in");
  in.dim(0).set_estimate(0, 100);
  Var x("x");
  RDom r(0, 100, "r");
  r.where(r.x % 2 == 0);
  Func hist("hist");
  hist(x) = 0;
  hist(Halide::clamp(in(r), 0, 9)) += 1;
  hist.set_estimate(x, 0, 10);
  PipelineView v = build_pipeline_view({hist});
  ASSERT_EQ(v.stages.size(), 1u);
  const Stage& h = v.stages[0];
  EXPECT_EQ(h.dtype, "int32");
  ASSERT_EQ(h.definitions.size(), 2u);
  const Definition& upd = h.definitions[1];
  ASSERT_EQ(upd.loops.size(), 1u);  // only r: x is not a loop of this update
  EXPECT_TRUE(upd.loops[0].reduction);
  EXPECT_EQ(upd.points, 100);
  EXPECT_TRUE(upd.has_predicate);
  EXPECT_FALSE(h.definitions[0].has_predicate);
  ASSERT_EQ(upd.store.size(), 1u);
  EXPECT_FALSE(upd.store[0].affine);
  EXPECT_EQ(upd.store[0].depends_on, std::vector<int>{0});
  ASSERT_EQ(upd.self_accesses.size(), 1u);
  const Edge* e = v.edge("in", hist.name());
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->accesses.size(), 1u);  // in(r) in the store index and in the value: one site
  EXPECT_EQ(e->accesses[0].dims[0].coeffs, Coeffs{1});
  EXPECT_EQ(e->footprint_elements, 100);
  EXPECT_EQ(upd.ops.loads, 2);  // in(r) once (shared by store and value), hist(...) once
  EXPECT_EQ(upd.ops.self_loads, 1);
  EXPECT_EQ(upd.ops.i_minmax, 2);  // the clamp, once
  EXPECT_EQ(upd.ops.i_divmod, 1);  // the predicate's r % 2
  EXPECT_EQ(h.points, 10 + 100);
}

TEST(PipelineView, JsonIsDeterministicAndComplete) {
  Stencil p1(true);
  PipelineView v1 = build_pipeline_view({p1.g}), v2 = build_pipeline_view({p1.g});
  EXPECT_EQ(v1.to_json(), v2.to_json());
  auto j = nlohmann::json::parse(v1.to_json(2));
  ASSERT_EQ(j["stages"].size(), 2u);
  EXPECT_EQ(j["stages"][1]["name"], p1.g.name());
  EXPECT_EQ(j["stages"][0]["definitions"][0]["ops"]["f_mul"], 1);
  EXPECT_EQ(j["edges"][1]["footprint"][0]["extent"], 17);
  EXPECT_EQ(j["inputs"][0]["name"], "in");
  const std::string s = v1.summary();
  EXPECT_NE(s.find(p1.g.name() + " (output)"), std::string::npos) << s;
  EXPECT_NE(s.find("<- in"), std::string::npos) << s;
}

// A Conv(strides 2 x 3, pads 1) + Relu model through import, partition and lower_workload.
TEST(PipelineView, LoweredConvWorkload) {
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 5, 9, 9})
      .initializer("w", test::rand_f32({4, 5, 3, 2}, 1))
      .initializer("bias", test::rand_f32({4}, 2))
      .node("Conv", {"x", "w", "bias"}, {"c"},
            {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 3}}})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  Graph g = test::import_model(b.save("conv.onnx"));
  Partition part = partition_graph(g);
  ASSERT_EQ(part.workloads.size(), 1u);
  LoweredWorkload lw = lower_workload(part.workloads[0]);
  PipelineView v = build_pipeline_view(lw.outputs);
  SCOPED_TRACE(v.summary());

  // Halide makes reused Func names unique ("x$2"): match by substring.
  auto has = [](const std::string& s, const std::string& t) { return s.find(t) != std::string::npos; };
  const Stage *acc = nullptr, *pad = nullptr;
  for (const auto& s : v.stages) {
    if (has(s.name, "_acc")) acc = &s;
    if (has(s.name, "_pad")) pad = &s;
  }
  ASSERT_NE(acc, nullptr);
  ASSERT_NE(pad, nullptr);
  EXPECT_LT(v.stage_index(pad->name), v.stage_index(acc->name));
  EXPECT_TRUE(v.stages.back().is_output);
  EXPECT_EQ(v.inputs.size(), part.workloads[0].graph.inputs.size());  // x, w, bias as ImageParams
  for (const auto& in : v.inputs) {  // define_tensor("input_<name>") renames each ImageParam
    ASSERT_EQ(in.consumers.size(), 1u);
    const Stage* s = v.stage(in.consumers[0]);
    EXPECT_TRUE(has(s->name, "input_" + in.name));
    EXPECT_TRUE(s->is_rename);
    EXPECT_EQ(s->rename_of, in.name);
  }

  // Output [1, 4, 5, 4] in ONNX order: d0 = W (4), d1 = H (5), d2 = C (4), d3 = N (1).
  ASSERT_EQ(acc->dims.size(), 4u);
  EXPECT_EQ(acc->dims[0].extent, 4);
  EXPECT_EQ(acc->dims[1].extent, 5);
  EXPECT_EQ(acc->dims[2].extent, 4);
  EXPECT_EQ(acc->dims[3].extent, 1);
  ASSERT_EQ(acc->definitions.size(), 2u);
  const Definition& upd = acc->definitions[1];
  ASSERT_EQ(upd.loops.size(), 7u);  // 4 pure, then kx, ky, ci
  EXPECT_TRUE(upd.loops[4].reduction && upd.loops[5].reduction && upd.loops[6].reduction);
  EXPECT_EQ(upd.loops[4].extent, 2);  // kx (kernel width)
  EXPECT_EQ(upd.loops[5].extent, 3);  // ky (kernel height)
  EXPECT_EQ(upd.loops[6].extent, 5);  // input channels
  EXPECT_EQ(upd.points, 4 * 5 * 4 * 1 * 2 * 3 * 5);
  EXPECT_EQ(upd.ops.f_mul, 1);
  EXPECT_EQ(upd.ops.f_add, 1);
  EXPECT_EQ(upd.ops.loads, 3);
  EXPECT_EQ(upd.ops.self_loads, 1);
  EXPECT_EQ(upd.ops.i_mul, 2);  // d0 * 3 and d1 * 2 (the dilation's * 1 is simplified away)
  EXPECT_EQ(upd.ops.i_add, 2);

  const Edge* e = v.edge(pad->name, acc->name);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->accesses.size(), 1u);
  const Access& a = e->accesses[0];
  EXPECT_EQ(a.definition, 1);
  ASSERT_EQ(a.dims.size(), 4u);
  for (const auto& d : a.dims) EXPECT_TRUE(d.affine) << d.expr;
  const int d0 = loop_index(upd, "d0"), d1 = loop_index(upd, "d1");
  ASSERT_GE(d0, 0);
  ASSERT_GE(d1, 0);
  EXPECT_EQ(a.dims[0].coeffs[d0], 3);  // W stride
  EXPECT_EQ(a.dims[0].coeffs[4], 1);   // + kx
  EXPECT_EQ(a.dims[1].coeffs[d1], 2);  // H stride
  EXPECT_EQ(a.dims[1].coeffs[5], 1);   // + ky
  EXPECT_EQ(a.dims[2].coeffs, (Coeffs{0, 0, 0, 0, 0, 0, 1}));  // channel = ci
  EXPECT_EQ(a.dims[3].coeffs[loop_index(upd, "d3")], 1);
  // The padded input (11 x 11 x 5 x 1) is read entirely.
  ASSERT_EQ(e->footprint.size(), 4u);
  EXPECT_EQ(e->footprint[0].extent, 11);
  EXPECT_EQ(e->footprint[1].extent, 11);
  EXPECT_EQ(e->footprint[2].extent, 5);
  EXPECT_EQ(e->footprint_elements, pad->elements);
  // The pad stage clamps and selects: its reads of the input are not affine along W and H.
  const auto into_pad = v.edges_into(pad->name);
  ASSERT_EQ(into_pad.size(), 1u);
  EXPECT_FALSE(into_pad[0]->accesses[0].dims[0].affine);
  EXPECT_GT(pad->definitions[0].ops.f_select, 0);
}


// What the default rule reads of a tile's operands: a panel index (x / 32) even where the loop
// ranges fold it, an input's constant extent and stride constraints, the load a copy is made of
// (a transpose of an input), and stage renaming.
TEST(PipelineView, PanelIndicesConstraintsCopiesAndRenames) {
  ImageParam b(Halide::Float(32), 3, "b");  // [N / 32][K][32] panels
  b.dim(0).set_estimate(0, 32).set_extent(32);
  b.dim(1).set_estimate(0, 64).set_extent(64).set_stride(32);
  b.dim(2).set_estimate(0, 2).set_extent(2).set_stride(32 * 64);
  Var x("x"), y("y");
  RDom r(0, 64, "r");
  Func bt("bt"), acc("acc"), out("out");
  bt(x, y) = b(y % 32, x, y / 32);  // a transposed, unpacked view: a copy of b at another index
  acc(x, y) = 0.0f;
  acc(x, y) += b(x % 32, r, x / 32) * bt(r, y);
  out(x, y) = acc(x, y);
  out.set_estimate(x, 0, 32).set_estimate(y, 0, 4);
  acc.set_estimate(x, 0, 32).set_estimate(y, 0, 4);
  bt.set_estimate(x, 0, 64).set_estimate(y, 0, 4);
  PipelineView v = build_pipeline_view({out});
  const Stage* a = v.stage(acc.name());
  ASSERT_NE(a, nullptr);
  const Edge* e = v.edge("b", acc.name());
  ASSERT_NE(e, nullptr);
  const Access* update = nullptr;
  for (const Access& ac : e->accesses)
    if (ac.definition == 1) update = &ac;
  ASSERT_NE(update, nullptr);
  const Definition& d = a->definitions.at(1);
  // x ranges over 0..31: with the ranges, x / 32 is 0; the panel index is still seen.
  EXPECT_EQ(update->dims.at(2).div_loop, loop_index(d, "x"));
  EXPECT_EQ(update->dims.at(2).divisor, 32);
  EXPECT_EQ(update->dims.at(1).div_loop, -1);
  const InputTensor* in = v.input("b");
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->extent_constraints, (std::vector<int64_t>{32, 64, 2}));
  EXPECT_EQ(in->stride_constraints, (std::vector<int64_t>{1, 32, 2048}));  // Halide constrains dimension 0 dense by default
  EXPECT_EQ(v.stage(bt.name())->copy_of, "b");
  EXPECT_FALSE(v.stage(bt.name())->is_rename);
  EXPECT_EQ(v.stage(out.name())->copy_of, acc.name());
  EXPECT_TRUE(v.stage(out.name())->is_rename);

  v.rename_stages({{acc.name(), "sum"}});
  EXPECT_NE(v.stage("sum"), nullptr);
  EXPECT_EQ(v.stage(out.name())->rename_of, "sum");
  EXPECT_EQ(v.stage(out.name())->producers, std::vector<std::string>{"sum"});
  EXPECT_NE(v.edge("b", "sum"), nullptr);
  EXPECT_NE(v.edge("sum", out.name()), nullptr);
  EXPECT_EQ(v.input("b")->consumers, (std::vector<std::string>{bt.name(), "sum"}));
}

}  // namespace
}  // namespace ts
