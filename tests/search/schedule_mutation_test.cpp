// Mutations stay in the schedule space: every neighbour of a drawn schedule of real workloads
// validates, differs from it, and keeps the decisions that do not depend on the redrawn one.
#include "search/schedule_mutation.h"

#include <gtest/gtest.h>

#include <set>

#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

TEST(ScheduleMutation, NeighboursValidateDifferAndKeepIndependentDecisions) {
  const auto workloads = test::zoo_workloads("resnet18.onnx");
  std::mt19937_64 rng(11);
  int checked = 0, kept_checked = 0;
  for (size_t wi = 0; wi < workloads.size(); wi += 3) {
    LoweredWorkload lw = lower_workload(workloads[wi]);
    ScheduleSpace space(build_pipeline_view(lw.outputs));
    Schedule s = space.sample(rng);
    for (int k = 0; k < 20; k++) {
      const size_t i = std::uniform_int_distribution<size_t>(0, space.decisions().size() - 1)(rng);
      Schedule m = mutate_decision(space, s, i, rng);
      auto why = m.validate(lw.outputs);
      ASSERT_FALSE(why) << workloads[wi].name << ": " << *why << "\n" << m.to_json(2);
      // Decisions before i see the same partial schedule: they are kept.
      for (size_t j = 0; j < i; j++)
        for (const auto& st : s.stages)
          if (st.func == space.schedule_name(j)) {
            const StageSchedule* e = m.find(st.func, st.definition);
            ASSERT_TRUE(e) << st.name();
            EXPECT_EQ(*e, st) << st.name();
            kept_checked++;
          }
      Schedule n = mutate(space, s, rng);
      ASSERT_FALSE(n.validate(lw.outputs));
      EXPECT_NE(n.hash(), s.hash()) << "mutate() returned its input for " << workloads[wi].name;
      s = n;
      checked++;
    }
  }
  EXPECT_GE(checked, 100);
  EXPECT_GT(kept_checked, 0);
}

TEST(ScheduleMutation, ComponentsNameStageAndKind) {
  Schedule s;
  StageSchedule a;
  a.func = "f";
  a.placement = Placement::Root;
  a.vectorize = "x";
  a.vector_width = 16;
  s.set(a);
  auto c = schedule_components(s);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0], "f:place=root .");
  EXPECT_EQ(c[3], "f:vec=xx16");
  // The same choices at another stage are other components.
  a.func = "g";
  s.set(a);
  auto c2 = schedule_components(s);
  EXPECT_EQ(std::set<std::string>(c2.begin(), c2.end()).size(), 12u);
}

}  // namespace
}  // namespace ts
