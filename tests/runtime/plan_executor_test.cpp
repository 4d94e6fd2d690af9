// The plan executor: text round-trip of any names, malformed plans named by line or step, and
// runs over real halide_buffer_t arguments: inputs by pointer, constants in place, a runtime
// packing before its step, outputs copied, a failing step named.
#include "runtime/plan_executor.h"
#include "support/throws_naming.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ts::plan {
namespace {

float* host(void* b) { return reinterpret_cast<float*>(static_cast<halide_buffer_t*>(b)->host); }
int64_t count(void* b) {
  auto* h = static_cast<halide_buffer_t*>(b);
  int64_t n = 1;
  for (int d = 0; d < h->dimensions; d++) n *= h->dim[d].extent;
  return n;
}

// out = a + b (same size); args: a, b, out.
int add_fn(void** args) {
  for (int64_t i = 0; i < count(args[2]); i++) host(args[2])[i] = host(args[0])[i] + host(args[1])[i];
  return 0;
}
// out = in copied (its Halide dims must be [4, 2] innermost first, i.e. shape [2][4]); args: in, out.
int copy_fn(void** args) {
  auto* in = static_cast<halide_buffer_t*>(args[0]);
  if (in->dimensions != 2 || in->dim[0].extent != 4 || in->dim[0].stride != 1 || in->dim[1].stride != 4) return 7;
  for (int64_t i = 0; i < count(args[1]); i++) host(args[1])[i] = host(args[0])[i];
  return 0;
}
int fail_fn(void**) { return -3; }

Buffer f32(const std::string& name, Role role, std::vector<int64_t> shape, uint64_t offset = 0) {
  return Buffer{name, role, 2, 32, std::move(shape), offset};
}

// x [1, 8] (input) + c [1, 8] (constant) -> s; s packed by 4 along axis 1 -> sp [1, 2, 4];
// copy sp -> y [1, 2, 4] (output).
Plan two_step_plan() {
  Plan p;
  p.functions = {"add_argv", "copy_argv"};
  p.buffers = {f32("x", Role::Input, {1, 8}), f32("c w/ space%", Role::Constant, {1, 8}),
               f32("s", Role::Activation, {1, 8}), f32("s#packed", Role::Activation, {2, 4}),
               f32("y", Role::Activation, {2, 4})};
  p.steps = {Step{0, "add step", {0, 1, 2}, {}}, Step{1, "copy step", {3, 4}, {Pack{2, 3, 1, 4}}}};
  p.inputs = {0};
  p.outputs = {4};
  p.constant_bytes = 64;
  return p;
}

TEST(PlanExecutor, TextRoundTripsAnyName) {
  Plan p = two_step_plan();
  p.buffers[0].name = "in put\t%20\n";
  p.buffers[4].name = "";
  Plan q = parse(serialize(p));
  EXPECT_EQ(serialize(q), serialize(p));
  EXPECT_EQ(q.buffers[0].name, "in put\t%20\n");
  EXPECT_EQ(q.buffers[1].name, "c w/ space%");
  EXPECT_EQ(q.buffers[4].name, "");
  EXPECT_EQ(q.steps[1].packs[0].block, 4);
  EXPECT_EQ(q.steps[0].label, "add step");
}

TEST(PlanExecutor, MalformedPlansAreNamed) {
  auto message = [](const std::string& text) { return test::error_message<std::runtime_error>([&] { parse(text); }); };
  EXPECT_NE(message("").find("empty"), std::string::npos);
  EXPECT_NE(message("buffer x 0 2 32 0 0\n").find("no header"), std::string::npos);
  EXPECT_NE(message("tensorsched-plan 1\nbuffer x 0 2 32\n").find("line 2"), std::string::npos);
  EXPECT_NE(message("tensorsched-plan 1\nfrobnicate\n").find("unknown record"), std::string::npos);
  Plan p = two_step_plan();
  p.steps[0].args.push_back(9);
  EXPECT_NE(message(serialize(p)).find("step add step: buffer index 9"), std::string::npos);
  p = two_step_plan();
  p.buffers[1].offset = 48;  // 32 bytes at 48 end past 64
  EXPECT_NE(message(serialize(p)).find("past the end"), std::string::npos);
}

TEST(PlanExecutor, RunsStepsWithPackingAndNamesAFailingStep) {
  alignas(64) float constant[16] = {10, 20, 30, 40, 50, 60, 70, 80};
  Executor e(two_step_plan(), {add_fn, copy_fn}, {nullptr, constant, nullptr, nullptr, nullptr});
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float y[8] = {};
  const void* in[] = {x};
  void* out[] = {y};
  e.run(in, out, true);
  // s = x + c = 11 22 ... 88; packed by 4 along axis 1 of [1, 8] it is the same bytes as [2, 4].
  for (int i = 0; i < 8; i++) EXPECT_EQ(y[i], 11 * (i + 1)) << i;
  EXPECT_EQ(e.step_seconds().size(), 2u);

  Executor bad(two_step_plan(), {add_fn, fail_fn}, {nullptr, constant, nullptr, nullptr, nullptr});
  EXPECT_TRUE(test::throws_naming<std::runtime_error>([&] { bad.run(in, out); }, {"copy step", "-3"}));
  EXPECT_THROW(Executor(two_step_plan(), {add_fn}, {}), std::runtime_error);                  // no code for a function
  EXPECT_THROW(Executor(two_step_plan(), {add_fn, copy_fn}, {nullptr}), std::runtime_error);  // no constant bytes
}

// a and b are views of c ([4][8]: a row 0, b row 2); the copy steps write a and b,
// the elided concat step runs nothing, and c holds both rows.
TEST(PlanExecutor, ViewsShareTheirRootsBytesAndElidedStepsRunNothing) {
  auto copy8 = [](void** args) {  // out = in, 8 floats; args: in, out
    for (int i = 0; i < 8; i++) host(args[1])[i] = host(args[0])[i];
    return 0;
  };
  Plan p;
  p.functions = {"copy8_argv"};
  p.buffers = {f32("x", Role::Input, {8}), f32("y", Role::Input, {8}), f32("a", Role::Activation, {8}),
               f32("b", Role::Activation, {8}), f32("c", Role::Activation, {2, 8})};
  p.buffers[2].view_of = 4;
  p.buffers[3].view_of = 4;
  p.buffers[3].view_offset = 32;  // would be misaligned
  p.steps = {Step{0, "copy x", {0, 2}, {}}, Step{0, "copy y", {1, 3}, {}}, Step{kElided, "concat", {2, 3, 4}, {}}};
  p.inputs = {0, 1};
  p.outputs = {4};
  EXPECT_THROW(validate(p), std::runtime_error);
  p.buffers[4].shape = {4, 8};  // rows 0 and 2: 64-byte aligned
  p.buffers[3].view_offset = 64;
  Plan q = parse(serialize(p));
  EXPECT_EQ(q.buffers[3].view_of, 4);
  EXPECT_EQ(q.buffers[3].view_offset, 64u);
  EXPECT_EQ(q.steps[2].function, kElided);

  Executor e(q, {copy8}, {});
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const float y[8] = {9, 10, 11, 12, 13, 14, 15, 16};
  float c[32] = {};
  const void* in[] = {x, y};
  void* out[] = {c};
  e.run(in, out);
  for (int i = 0; i < 8; i++) {
    EXPECT_EQ(c[i], x[i]) << i;
    EXPECT_EQ(c[16 + i], y[i]) << i;
  }

  p.buffers[4].view_of = 2;  // c inside a inside c
  EXPECT_THROW(validate(p), std::runtime_error);
  p.buffers[4].view_of = 99;  // a and b view c, which views no buffer
  EXPECT_THROW(validate(p), std::runtime_error);
  p.buffers[4].view_of = -1;
  p.buffers[3].view_offset = 128;  // 32 bytes at 128 end past c's 128
  EXPECT_THROW(validate(p), std::runtime_error);
  p.buffers[3].view_offset = 64;
  p.buffers[3].role = Role::Input;  // an input's bytes are the caller's
  EXPECT_THROW(validate(p), std::runtime_error);
}

// x -> a -> b -> c (+1 each): a live over steps 0-1, b over 1-2, c from step 2 to the end (an
// output): a and c share bytes, b does not share with either; the run
// still computes x + 3. A view keeps its root live: with a inside r (elided step 3 reads it at
// the end), a's bytes can no longer be c's.
TEST(PlanExecutor, ActivationsWhoseLiveRangesDoNotOverlapShareTheArena) {
  auto plus1 = [](void** args) {  // out = in + 1, 16 floats; args: in, out
    for (int i = 0; i < 16; i++) host(args[1])[i] = host(args[0])[i] + 1;
    return 0;
  };
  Plan p;
  p.functions = {"plus1_argv"};
  p.buffers = {f32("x", Role::Input, {16}), f32("a", Role::Activation, {16}), f32("b", Role::Activation, {16}),
               f32("c", Role::Activation, {16})};
  p.steps = {Step{0, "a", {0, 1}, {}}, Step{0, "b", {1, 2}, {}}, Step{0, "c", {2, 3}, {}}};
  p.inputs = {0};
  p.outputs = {3};
  uint64_t bytes = 0;
  std::vector<uint64_t> at = plan_arena(p, bytes);
  EXPECT_EQ(at[1], at[3]);
  EXPECT_NE(at[1], at[2]);
  EXPECT_EQ(bytes, 128u);  // two 64-byte slots for three buffers

  Executor e(p, {plus1}, {});
  float x[16], c[16];
  for (int i = 0; i < 16; i++) x[i] = static_cast<float>(i);
  const void* in[] = {x};
  void* out[] = {c};
  for (int run = 0; run < 2; run++) {
    e.run(in, out);
    for (int i = 0; i < 16; i++) ASSERT_EQ(c[i], i + 3) << i;
  }

  p.buffers.push_back(f32("r", Role::Activation, {16}));
  p.buffers[1].view_of = 4;
  p.steps.push_back(Step{kElided, "r", {1, 4}, {}});
  at = plan_arena(p, bytes);
  EXPECT_EQ(bytes, 192u);  // r (holding a) lives to the end, as does c: three slots
  EXPECT_NE(at[4], at[3]);
  EXPECT_NE(at[4], at[2]);
}

}  // namespace
}  // namespace ts::plan
