// Halide's schedules read back into Schedule data (schedule/schedule_reader.h): what Adams2019
// (its stack allocations included), Li2018 (fused loops named after one of theirs) and
// Mullapudi2016 choose for a real conv workload, and what
// the default rule's data applies,
// replay from the data to the very statement Halide lowered; directives a Schedule does not hold
// are refused naming the directive and the stage.
#include "schedule/schedule_reader.h"

#include <gtest/gtest.h>

#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "schedule/default_schedule.h"
#include "schedule/schedule_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

// Moves the storage of every Func stored outside the loop it is computed in (a sliding window)
// to that loop, as read_halide_schedule reads it.
void store_at_compute_levels(const std::vector<Halide::Func>& outputs) {
  for (const auto& [name, fn] : Halide::Internal::find_transitive_calls(outputs[0].function())) {
    Halide::LoopLevel compute = fn.schedule().compute_level(), store = fn.schedule().store_level();
    compute.lock();
    store.lock();
    if (!compute.is_inlined() && !compute.is_root() && !store.is_inlined() && !(store == compute))
      Halide::Func(fn).store_at(compute);
  }
}

// Applies `schedule_it` to one lowering of w, reads Halide's schedule back, replays the data on
// another lowering: both lower to the same statement (sliding windows aside, read as storage at
// the compute level). Returns the data read.
Schedule read_and_replay(const Workload& w, const std::function<void(const std::vector<Halide::Func>&)>& schedule_it) {
  LoweredWorkload chosen = lower_workload(w);
  schedule_it(chosen.outputs);
  std::string why;
  const std::optional<Schedule> read = read_halide_schedule(chosen.outputs, why);
  store_at_compute_levels(chosen.outputs);
  EXPECT_TRUE(read) << why;
  if (!read) return {};
  const Schedule record = Schedule::from_json(read->to_json());
  EXPECT_EQ(record, *read);
  LoweredWorkload replayed = lower_workload(w);
  EXPECT_EQ(record.validate(replayed.outputs), std::nullopt) << record.to_json(1);
  apply(record, replayed.outputs, host_code_target());
  const std::string want = test::renamed_statement(chosen), got = test::renamed_statement(replayed);
  size_t at = 0;
  while (at < want.size() && at < got.size() && want[at] == got[at]) at++;
  EXPECT_TRUE(got == want) << "first difference at " << at << ": wanted '" << want.substr(at > 200 ? at - 200 : 0, 400)
                       << "' got '" << got.substr(at > 200 ? at - 200 : 0, 400) << "'\n" << record.to_json(1);
  return record;
}

Workload small_conv() { return test::conv_relu_workload(test::save_conv_chain("reader_conv.onnx", 16, 32, 16, 12, 12)); }

TEST(ScheduleReader, AutoschedulerChoicesReplayFromData) {
  const Workload w = small_conv();
  for (const auto& [name, params] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"Adams2019", {{"beam_size", "1"}}}, {"Li2018", {}}, {"Mullapudi2016", {}}}) {
    Schedule recipe;
    recipe.autoscheduler = AutoschedulerRecipe{name, params};
    const Schedule s = read_and_replay(w, [&](const auto& outs) { apply(recipe, outs, host_code_target()); });
    EXPECT_FALSE(s.bound_outputs) << name;  // the autoschedulers do not bound the outputs
    int steps = 0;
    for (const auto& st : s.stages) steps += static_cast<int>(st.steps.size());
    EXPECT_GT(steps, 0) << name << ": no loop decisions read";
  }
}

TEST(ScheduleReader, TheDefaultRulesScheduleReadsBackAndReplays) {
  const Workload w = small_conv();
  read_and_replay(w, [&](const auto& outs) { apply(default_schedule(outs, host_code_target()), outs, host_code_target()); });
}

TEST(ScheduleReader, DirectivesAScheduleDoesNotHoldAreRefusedByName) {
  const Workload w = small_conv();
  LoweredWorkload lw = lower_workload(w);
  // A staging copy made outside a Schedule: the Func it copies has a wrapper.
  const auto env = Halide::Internal::find_transitive_calls(lw.outputs[0].function());
  Halide::Func copied, reader;
  for (const auto& [name, fn] : env)
    for (const auto& [callee, cfn] : Halide::Internal::find_direct_calls(fn))
      if (!reader.defined() && env.count(callee)) {
        reader = Halide::Func(fn);
        copied = Halide::Func(cfn);
      }
  ASSERT_TRUE(reader.defined());
  copied.in(reader).compute_root();
  std::string why;
  EXPECT_FALSE(read_halide_schedule(lw.outputs, why));
  EXPECT_NE(why.find("staging copies"), std::string::npos) << why;
  EXPECT_NE(why.find(func_base_name(copied.name())), std::string::npos) << why;
}

// Halide 14's sliding window computes wrong values for some schedules that store a Func outside
// the loop it is computed in, so such a choice is read as storage at the compute level.
TEST(ScheduleReader, StorageOutsideTheComputeLoopIsReadAtTheComputeLoop) {
  const Workload w = small_conv();
  LoweredWorkload lw = lower_workload(w);
  apply(default_schedule(lw.outputs, host_code_target()), lw.outputs, host_code_target());
  std::string producer;
  for (const auto& [name, fn] : Halide::Internal::find_transitive_calls(lw.outputs[0].function())) {
    Halide::LoopLevel at = fn.schedule().compute_level();
    at.lock();
    if (producer.empty() && !at.is_inlined() && !at.is_root()) {
      producer = func_base_name(name);
      Halide::Func(fn).store_root();
    }
  }
  ASSERT_FALSE(producer.empty()) << "the default rule computes no Func inside a loop of another";
  std::string why;
  const std::optional<Schedule> read = read_halide_schedule(lw.outputs, why);
  ASSERT_TRUE(read) << why;
  const StageSchedule* ss = read->find(producer);
  ASSERT_NE(ss, nullptr) << producer;
  EXPECT_EQ(ss->placement, Placement::ComputeAt);
  EXPECT_FALSE(ss->store_root);
  EXPECT_TRUE(ss->store_at.empty()) << ss->store_at;
}

}  // namespace
}  // namespace ts
