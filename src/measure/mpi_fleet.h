#pragma once
// MpiFleet: rank 0's side of measurement over the ranks of an mpirun (Open MPI): the other
// ranks build and run the candidates (serve_measurements, measure/mpi_measure_server.h), each on
// its own host, while rank 0 searches and keeps the database. MpiBuilder and MpiRunner
// (measure/mpi_builder.h, mpi_runner.h) are the Builder and Runner a Measurer uses over it.
//
// - Joining: each runner sends its host and machine identity; one whose identity differs from
//   rank 0's is refused with the reason (times of different machines are not compared).
// - Building: a batch is spread over the live runners, round robin, compiled there in parallel
//   (each with its own compile jobs) into that host's code cache; the fleet remembers which
//   runner holds which code, and the schedule, so a run finds it and code held by a lost runner
//   is built again on a live one when it is run.
// - Running: on the runner that holds the code, one candidate at a time. The inputs are the
//   workload's random_inputs(input seed), which every rank draws the same; the reference
//   outputs travel once per runner and workload.
// - Losing a runner: a runner that stays silent (no reply, no heartbeat) for kRunnerSilenceS
//   while it owes a reply, or overruns its request's deadline, is lost: its jobs in flight come
//   back `runner_lost`, nothing more is sent to it, and the tune goes on with the others. With
//   none left, every request is runner_lost. (Open MPI keeps the job alive past a dead rank
//   only under `mpirun --enable-recovery`.)
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "measure/mpi_world.h"
#include "measure/runner.h"
#include "measure/workload_compiler.h"

namespace ts {

// Seconds a runner that owes a reply may stay silent before it is lost (it sends a heartbeat
// every second while it builds or runs).
inline constexpr double kRunnerSilenceS = 15;

class MpiFleet {
 public:
  // Rank 0 of `world` (which outlives the fleet): the handshake with every other rank, refusing
  // those whose identity differs from `identity` (logged with the reason). Throws Error when
  // this is not rank 0 or no runner is accepted.
  MpiFleet(const MpiWorld& world, std::string identity);
  // Tells every live runner to stop.
  ~MpiFleet();
  MpiFleet(const MpiFleet&) = delete;
  MpiFleet& operator=(const MpiFleet&) = delete;

  // Runners accepted at the start, and those still live.
  int accepted() const { return accepted_; }
  int live() const { return static_cast<int>(live_.size()); }
  // "2/2 runners live", for progress lines.
  std::string status() const;

  // Compiles the jobs (each job's schedule_json set) on the live runners, at most `timeout_s`
  // each there (0 = none); outcomes in job order, runner_lost ones for a runner lost meanwhile.
  std::vector<CompileOutcome> build(const std::vector<CompileJob>& jobs, double timeout_s);
  // Whether a live runner holds (w, hash).
  bool has(const Workload& w, const std::string& schedule_hash) const;
  // Has the runner holding it remove it (no reply is awaited).
  void discard(const Workload& w, const std::string& schedule_hash);
  // Runs a built candidate on the runner holding it (see top).
  MeasureResult run(const RunRequest& request, const MeasureOptions& opts, std::vector<Tensor>* outputs);

 private:
  // One request to one runner and what came back.
  struct Exchange {
    int rank = 0;
    std::string request;           // pack_message bytes
    std::optional<std::string> reply;
    std::string lost;              // why no reply came (the runner is lost)
  };
  // Sends every request, then waits for every reply (at most `seconds` for each; 0 = no limit but
  // the silence). A runner that misses either is lost.
  void exchange(std::vector<Exchange>& ex, double seconds);
  void lose(int rank, const std::string& why);
  // The header of a request to `rank` about w, with w's subgraph as the first blob when the
  // runner has not seen w (`blobs` receives it).
  nlohmann::json workload_head(int rank, const Workload& w, std::vector<std::string>& blobs);
  // Where code is held, and what to build it from again.
  struct Placed {
    int rank = 0;
    std::string schedule_json;
    double timeout_s = 0;
  };
  using CodeKey = std::pair<std::string, std::string>;  // (workload exact key, schedule hash)

  const MpiWorld& world_;
  std::string identity_;
  int accepted_ = 0;
  std::vector<int> live_;                          // live runner ranks, ascending
  std::map<int, std::string> hosts_;               // rank -> host name
  std::map<int, std::set<std::string>> known_;     // rank -> workload keys it has the subgraph of
  std::map<int, std::set<std::string>> checked_;   // rank -> workload keys it has the reference outputs of
  std::map<CodeKey, Placed> placed_;
  size_t next_ = 0;                                // round robin over live_
  int64_t seq_ = 0;                                // request numbers (a late reply is told apart)
};

}  // namespace ts
