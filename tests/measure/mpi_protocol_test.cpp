// The measurement protocol between rank 0 and the runner ranks: messages carry a header and
// binary blobs intact, a cut message is refused naming where it came from, options and results
// survive the trip, and a runner of another machine is refused with the field that differs.
#include "measure/mpi_protocol.h"

#include <gtest/gtest.h>

#include "graph/error.h"
#include "tune/records_db.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

TEST(MpiProtocol, MessagesCarryHeaderAndBlobsIntact) {
  const std::string binary("\0\n{\xff", 4);
  const std::string packed = pack_message({{"op", "run"}, {"seq", 7}}, {binary, "", "subgraph"});
  const Unpacked u = unpack_message(packed, "test");
  EXPECT_EQ(u.head.at("op"), "run");
  EXPECT_EQ(u.head.at("seq"), 7);
  ASSERT_EQ(u.blobs.size(), 3u);
  EXPECT_EQ(u.blobs[0], binary);
  EXPECT_EQ(u.blobs[1], "");
  EXPECT_EQ(u.blobs[2], "subgraph");

  EXPECT_TRUE(test::throws_naming<Error>([&] { unpack_message(packed.substr(0, packed.size() - 3), "reply of rank 2"); },
                                         {"reply of rank 2: message cut short"}));
  EXPECT_THROW(unpack_message("not json\n", "x"), Error);
}

TEST(MpiProtocol, RunOptionsAndResultsSurviveTheTrip) {
  MeasureOptions o;
  o.repeats = 3;
  o.warmup = 2;
  o.cold_weights = false;
  o.run_timeout_s = 4.5;
  o.loser_s = 0.25;
  o.threads = 1;
  o.rtol = 1e-2;
  o.atol = 1e-3;
  o.stol = 2e-5;
  o.input_seed = 9;
  const MeasureOptions back = run_options_from_json(run_options_json(o));
  EXPECT_EQ(back.repeats, 3);
  EXPECT_EQ(back.warmup, 2);
  EXPECT_FALSE(back.cold_weights);
  EXPECT_EQ(back.run_timeout_s, 4.5);
  EXPECT_EQ(back.loser_s, 0.25);
  EXPECT_EQ(back.threads, 1);
  EXPECT_EQ(back.rtol, 1e-2);
  EXPECT_EQ(back.atol, 1e-3);
  EXPECT_EQ(back.stol, 2e-5);
  EXPECT_EQ(back.input_seed, 9u);

  MeasureResult r;
  r.schedule_hash = "abc";
  r.times = {3e-3, 1e-3, 2e-3};
  r.compile_seconds = 0.7;
  r.threads = 2;
  const MeasureResult got = measure_result_from_json(measure_result_json(r));
  EXPECT_EQ(got.schedule_hash, "abc");
  EXPECT_EQ(got.times, r.times);
  EXPECT_DOUBLE_EQ(got.median, 2e-3) << "statistics recomputed from the times";
  EXPECT_DOUBLE_EQ(got.min, 1e-3);
  EXPECT_EQ(got.threads, 2);
  MeasureResult lost;
  lost.error_kind = "runner_lost";
  lost.error_message = "runner rank 2 was silent for 15 s";
  EXPECT_EQ(measure_result_from_json(measure_result_json(lost)).error_message, lost.error_message);
}

TEST(MpiProtocol, ARunnerOfAnotherMachineIsRefusedNamingWhatDiffers) {
  const std::string ours = machine_fingerprint().dump();
  EXPECT_EQ(identity_mismatch(ours, ours), "");
  nlohmann::json other = machine_fingerprint();
  other["cpu"] = "Another CPU";
  const std::string why = identity_mismatch(ours, other.dump());
  EXPECT_NE(why.find("cpu"), std::string::npos) << why;
  EXPECT_NE(why.find("Another CPU"), std::string::npos) << why;
  nlohmann::json fewer = machine_fingerprint();
  fewer.erase("caches");
  EXPECT_NE(identity_mismatch(ours, fewer.dump()).find("caches"), std::string::npos);
  EXPECT_NE(identity_mismatch(ours, "garbage"), "");
}

}  // namespace
}  // namespace ts
