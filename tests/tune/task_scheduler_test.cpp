// The task schedulers on synthetic tasks (no measurement): which task each gives the next slot,
// with what size, and when tasks finish. The tuning loop with real measurements is in
// tuner_test.cpp.
#include "tune/task_scheduler.h"

#include <gtest/gtest.h>

#include <map>

namespace ts {
namespace {

// Tasks over workloads that outlive them: count, FLOPs, default and best time, class.
struct Fixture {
  std::vector<Workload> workloads;
  std::vector<Task> tasks;
  void add(int count, double flops, double default_s, const std::string& cls = "c") {
    Workload w;
    w.exact_key = "k" + std::to_string(workloads.size());
    w.class_key = cls;
    w.name = w.exact_key;
    w.count = count;
    w.flops = static_cast<int64_t>(flops);
    workloads.push_back(w);
    Task t;
    t.count = count;
    t.flops = flops;
    t.default_s = t.best_s = default_s;
    t.curve.push_back({0, default_s});
    tasks.push_back(std::move(t));
  }
  void wire() {
    for (size_t i = 0; i < tasks.size(); i++) tasks[i].w = &workloads[i];
  }
  // Runs a slot as the loop would: `measured` schedules, the best becomes `best`.
  void run(TaskScheduler& s, const Slot& slot, int measured, double best) {
    Task& t = tasks[slot.task];
    t.summary.slots++;
    t.summary.measured_now += measured;
    t.trials += measured;
    t.summary.seconds += slot.seconds;
    t.best_s = std::min(t.best_s, best);
    t.curve.push_back({t.summary.measured_now, t.best_s});
    s.observe(tasks, slot);
  }
};

TEST(TaskScheduler, FactoryKnowsEveryName) {
  for (const auto& n : scheduler_names()) EXPECT_EQ(make_task_scheduler(n, {})->name(), n);
  EXPECT_THROW(make_task_scheduler("fastest", {}), Error);
}

// Heaviest first (count x default), each its whole share of what is left, then finished.
TEST(SequentialScheduler, GivesEachTaskItsWholeShareHeaviestFirst) {
  Fixture f;
  f.add(1, 1e6, 1e-3);  // weight 1 ms
  f.add(3, 1e6, 1e-3);  // weight 3 ms
  f.wire();
  auto s = make_sequential_scheduler({});
  auto slot = s->next(f.tasks, {100.0, 0});
  ASSERT_TRUE(slot);
  EXPECT_EQ(slot->task, 1u);
  EXPECT_DOUBLE_EQ(slot->seconds, 75.0);
  f.run(*s, *slot, 10, 0.9e-3);
  EXPECT_TRUE(f.tasks[1].finished);
  slot = s->next(f.tasks, {40.0, 0});  // it overran: the rest is what is left
  ASSERT_TRUE(slot);
  EXPECT_EQ(slot->task, 0u);
  EXPECT_DOUBLE_EQ(slot->seconds, 40.0);
  f.run(*s, *slot, 10, 0.9e-3);
  EXPECT_FALSE(s->next(f.tasks, {1.0, 0}));
}

// A conv of >= 20 MFLOP at 2% of the peak comes before a heavier one at 60%; a small workload
// below peak (under 20 MFLOP) is no cliff and keeps its place by weight.
TEST(SequentialScheduler, TunesCliffsFirst) {
  Fixture f;
  const double peak = 100e9;
  f.add(1, 600e6, 10e-3);  // 60% of peak, weight 10 ms
  f.add(1, 100e6, 50e-3);  // 2%: a cliff, weight 50 ms
  f.add(1, 40e6, 2e-3);    // 20%: a cliff, weight 2 ms
  f.add(1, 1e6, 20e-3);    // 0.05%, but 1 MFLOP
  f.wire();
  EXPECT_TRUE(is_cliff(f.tasks[1], peak));
  EXPECT_FALSE(is_cliff(f.tasks[0], peak));
  EXPECT_FALSE(is_cliff(f.tasks[3], peak));
  SchedulerOptions o;
  o.peak_flops = peak;
  auto s = make_sequential_scheduler(o);
  std::vector<size_t> order;
  while (auto slot = s->next(f.tasks, {100.0, 0})) {
    order.push_back(slot->task);
    f.run(*s, *slot, 1, f.tasks[slot->task].default_s);
  }
  EXPECT_EQ(order, (std::vector<size_t>{1, 2, 3, 0}));
}

TEST(SequentialScheduler, TrialSharesCountEarlierRuns) {
  Fixture f;
  f.add(1, 1e6, 1e-3);
  f.add(1, 1e6, 2e-3);
  f.wire();
  f.tasks[1].trials = 4;  // recorded by an earlier run
  SchedulerOptions o;
  o.trials_per_task = 10;
  auto s = make_sequential_scheduler(o);
  auto slot = s->next(f.tasks, {0, 16});
  ASSERT_TRUE(slot);
  EXPECT_EQ(slot->task, 1u);
  EXPECT_EQ(slot->trials, 6);
}

TEST(RoundRobinScheduler, TakesTurnsAndSkipsFinishedTasks) {
  Fixture f;
  for (int k = 0; k < 3; k++) f.add(1, 1e6, 1e-3);
  f.wire();
  SchedulerOptions o;
  o.slot_seconds = 5;
  auto s = make_round_robin_scheduler(o);
  std::vector<size_t> order;
  for (int k = 0; k < 4; k++) {
    auto slot = s->next(f.tasks, {100, 0});
    ASSERT_TRUE(slot);
    EXPECT_DOUBLE_EQ(slot->seconds, 5.0);
    order.push_back(slot->task);
    if (k == 1) f.tasks[2].finished = true;
    f.run(*s, *slot, 2, 1e-3);
  }
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 0, 1}));
}

// Effort in proportion to FLOPs x count: a task with 3x the FLOPs gets 3 of every 4 slots.
TEST(LinearScheduler, SharesEffortByFlops) {
  Fixture f;
  f.add(1, 3e6, 1e-3);
  f.add(1, 1e6, 1e-3);
  f.wire();
  SchedulerOptions o;
  o.slot_trials = 2;
  auto s = make_linear_scheduler(o);
  std::map<size_t, int> slots;
  for (int k = 0; k < 8; k++) {
    auto slot = s->next(f.tasks, {0, 100});
    ASSERT_TRUE(slot);
    EXPECT_EQ(slot->trials, 2);
    slots[slot->task]++;
    f.run(*s, *slot, 2, 1e-3);
  }
  EXPECT_EQ(slots[0], 6);
  EXPECT_EQ(slots[1], 2);
}

// After one slot each, the task whose latency still falls fastest (and weighs most) is chosen.
TEST(GradientScheduler, PrefersTheTaskWhoseLatencyFallsFastest) {
  Fixture f;
  f.add(4, 1e8, 4e-3, "conv");  // heavy, improving
  f.add(1, 1e6, 1e-3, "relu");  // light, flat
  f.wire();
  SchedulerOptions o;
  o.slot_seconds = 2;
  o.seed = 1;
  auto s = make_gradient_scheduler(o);
  for (int k = 0; k < 2; k++) {  // warm-up: one slot each
    auto slot = s->next(f.tasks, {100, 0});
    ASSERT_TRUE(slot);
    EXPECT_EQ(slot->task, static_cast<size_t>(k));
    f.run(*s, *slot, 4, slot->task == 0 ? 3e-3 : 1e-3);
  }
  int heavy = 0;
  for (int k = 0; k < 20; k++) {
    auto slot = s->next(f.tasks, {100, 0});
    ASSERT_TRUE(slot);
    heavy += slot->task == 0;
    f.run(*s, *slot, 4, slot->task == 0 ? f.tasks[0].best_s * 0.97 : 1e-3);
  }
  EXPECT_GE(heavy, 17);  // epsilon-greedy leaves the rest to chance
  EXPECT_TRUE(f.tasks[1].finished || f.tasks[1].summary.slots <= 4);
}

// DynaTune: every task once (UCB infinite), then the one whose curve promises the largest
// weighted latency reduction; a task that stopped improving finishes.
TEST(DynaTuneScheduler, FollowsThePredictedLatencyReductionAndStopsFlatTasks) {
  Fixture f;
  f.add(2, 2e8, 4e-3);  // still improving along a saturating curve
  f.add(2, 2e8, 4e-3);  // flat
  f.wire();
  SchedulerOptions o;
  o.slot_trials = 4;
  o.peak_flops = 2e11;
  o.seed = 3;
  auto s = make_dynatune_scheduler(o);
  auto improving = [](int measured) { return 4e-3 / (1.0 + 2.0 * measured / (measured + 20.0)); };
  std::map<size_t, int> slots;
  for (int k = 0; k < 14; k++) {
    auto slot = s->next(f.tasks, {0, 1000});
    ASSERT_TRUE(slot);
    slots[slot->task]++;
    const int measured = f.tasks[slot->task].summary.measured_now + slot->trials;
    f.run(*s, *slot, slot->trials, slot->task == 0 ? improving(measured) : 4e-3);
  }
  EXPECT_TRUE(f.tasks[1].finished);  // no improvement in `patience` slots
  EXPECT_GT(slots[0], slots[1]);
  EXPECT_GE(slots[1], 1);
}

TEST(TaskScheduler, StoppedImprovingLooksAtTheLastPatienceSlots) {
  Task t;
  t.curve = {{0, 10}, {2, 9}, {4, 9}, {6, 9}};
  EXPECT_FALSE(stopped_improving(t, 3));
  t.curve.push_back({8, 9});
  EXPECT_TRUE(stopped_improving(t, 3));
}

}  // namespace
}  // namespace ts
