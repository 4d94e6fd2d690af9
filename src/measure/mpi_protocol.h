#pragma once
// The measurement protocol between rank 0 of an mpirun (the tuner: MpiFleet, measure/mpi_fleet.h)
// and the other ranks (runners: serve_measurements, measure/mpi_measure_server.h). Every message
// is a JSON header line followed by binary blobs (a workload's subgraph, output tensors), their
// sizes listed in the header's "blobs".
//
//   runner -> 0   hello      {host, identity}: the runner's host and machine identity
//   0 -> runner   hello      {accepted, why}: a runner of another identity is refused
//   0 -> runner   request    {seq, op: build | run | discard | stop, ...}
//   runner -> 0   reply      {seq, ...}: one per build and run request
//   runner -> 0   heartbeat  (empty), at least every second while it builds or runs
//
// A build names the workload by exact key and carries its subgraph the first time that runner
// sees it; a run carries the reference outputs the first time that runner checks the workload.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "measure/measurer.h"

namespace ts {

inline constexpr int kMpiHelloTag = 81;
inline constexpr int kMpiRequestTag = 82;
inline constexpr int kMpiReplyTag = 83;
inline constexpr int kMpiHeartbeatTag = 84;

// A header and its blobs as one message.
std::string pack_message(nlohmann::json head, const std::vector<std::string>& blobs = {});
// The header and blobs of a pack_message; throws Error naming `where` when it is not one.
struct Unpacked {
  nlohmann::json head;
  std::vector<std::string> blobs;
};
Unpacked unpack_message(const std::string& bytes, const std::string& where);

// What a runner needs of MeasureOptions to run a candidate (repeats, warm-up, timeouts, threads,
// tolerances, input seed); not the compile options, faults or cache.
nlohmann::json run_options_json(const MeasureOptions& o);
MeasureOptions run_options_from_json(const nlohmann::json& j);

// A MeasureResult's measured fields (times, errors, compile seconds, threads); the statistics
// are recomputed from the times.
nlohmann::json measure_result_json(const MeasureResult& r);
MeasureResult measure_result_from_json(const nlohmann::json& j);

// Why a runner of machine identity `theirs` may not measure for a tuner of identity `ours` ("" when
// it may): times are only comparable on identical hosts. Identities are JSON objects (the
// records' machine fingerprint); the reason names the first field that differs.
std::string identity_mismatch(const std::string& ours, const std::string& theirs);

}  // namespace ts
