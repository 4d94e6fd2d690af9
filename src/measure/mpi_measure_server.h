#pragma once
// What a rank other than 0 does in an mpirun measurement (`tune --runner mpi`): it says hello
// with its host and machine identity, and, when rank 0 accepts it, builds and runs what rank 0
// sends (measure/mpi_protocol.h) with a LocalBuilder and a LocalRunner over this host's code
// cache, until rank 0 says stop. While it builds or runs it sends a heartbeat every second, so
// that rank 0 tells a slow runner from a dead one (measure/mpi_fleet.h).
#include <string>

#include "measure/measurer.h"
#include "measure/mpi_world.h"

namespace ts {

// Serves rank 0 until it says stop. `identity` is this host's machine identity (as rank 0
// compares it); `local` gives the code cache root and the compile jobs. Returns 0 when stopped,
// 1 when rank 0 refused this host (the reason logged).
int serve_measurements(const MpiWorld& world, const std::string& identity, const MeasureOptions& local);

}  // namespace ts
