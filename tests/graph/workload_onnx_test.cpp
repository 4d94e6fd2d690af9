// A workload's subgraph as ONNX: every workload of real networks (blocked layouts, Winograd
// marks, embedded constants, weights as constant inputs) reads back as the same workload, whose
// pipeline lowers to the same statement; damaged or mismatched bytes are refused by name.
#include "graph/workload_onnx.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "api/compile_model.h"
#include "graph/error.h"
#include "graph/winograd.h"
#include "measure/workload_compiler.h"
#include "schedule/default_schedule.h"
#include "support/small_workloads.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

void expect_same_workload(const Workload& a, const Workload& b) {
  EXPECT_EQ(a.exact_key, b.exact_key);
  EXPECT_EQ(a.class_key, b.class_key);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.constant_inputs, b.constant_inputs);
  EXPECT_EQ(a.graph.inputs, b.graph.inputs);
  EXPECT_EQ(a.graph.outputs, b.graph.outputs);
  for (const auto& [name, t] : a.graph.tensors) {
    ASSERT_TRUE(b.graph.tensors.count(name)) << name;
    EXPECT_EQ(b.graph.tensor(name).layout, t.layout) << name;
  }
}

TEST(WorkloadOnnx, EveryWorkloadOfResNet18AndMobileNetReadsBackAsItself) {
  int winograd = 0, blocked = 0, embedded = 0, total = 0;
  for (const char* model : {"resnet18.onnx", "mobilenet_v2.onnx"}) {
    LoadOptions lo;
    lo.threads = 1;  // Winograd pays on more convs at one thread
    const Graph g = load_model(std::string(TENSORSCHED_SOURCE_DIR) + "/models/" + model, lo);
    for (const Workload& w : partition_graph(g).workloads) {
      const Workload back = workload_from_subgraph(workload_subgraph(w), w.name);
      expect_same_workload(w, back);
      for (const auto& n : w.graph.nodes) winograd += n.has(kWinogradAttr);
      for (const auto& [name, t] : w.graph.tensors) {
        blocked += t.layout.blocked();
        embedded += t.value.has_value();
      }
      total++;
    }
  }
  EXPECT_GT(total, 20);
  EXPECT_GT(winograd, 0) << "a Winograd conv among them";
  EXPECT_GT(blocked, 0);
  EXPECT_GT(embedded, 0) << "a constant the key embeds among them";
}

// What features and measurements need: the same pipeline, so the same lowered statement under
// the rule's schedule.
TEST(WorkloadOnnx, TheSubgraphLowersToTheSameStatement) {
  const Workload w = test::conv_relu_workload(test::save_conv_chain("subgraph_chain.onnx", 8, 32, 48, 9, 11));
  const Workload back = workload_from_subgraph(workload_subgraph(w), "chain");
  LoweredWorkload a = lower_workload(w), b = lower_workload(back);
  apply(default_schedule(a.outputs, host_code_target()), a.outputs, host_code_target());
  apply(default_schedule(b.outputs, host_code_target()), b.outputs, host_code_target());
  EXPECT_EQ(test::renamed_statement(a), test::renamed_statement(b));
}

TEST(WorkloadOnnx, DamagedOrMismatchedSubgraphsAreRefusedByName) {
  const Workload w = test::matmul_relu_workload();
  auto error_of = [](const std::string& bytes) {
    return test::error_message<Error>([&] { workload_from_subgraph(bytes, "records.db: workload 1234"); });
  };
  EXPECT_NE(error_of("not a model").find("records.db: workload 1234: workload subgraph is not an ONNX model"),
            std::string::npos);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(workload_subgraph(w)));
  for (auto& e : *m.mutable_metadata_props())
    if (e.key() == "tensorsched.key_hash") e.set_value("0000000000000000");
  EXPECT_NE(error_of(m.SerializeAsString()).find("not the 0000000000000000 it was stored with"), std::string::npos);
  ASSERT_TRUE(m.ParseFromString(workload_subgraph(w)));
  m.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  EXPECT_NE(error_of(m.SerializeAsString()).find("reads tensor 'nowhere'"), std::string::npos);
}

}  // namespace
}  // namespace ts
