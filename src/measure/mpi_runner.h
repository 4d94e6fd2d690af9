#pragma once
// MpiRunner: a Runner that runs each candidate on the runner rank of an mpirun that built it
// (measure/mpi_fleet.h); a runner lost meanwhile makes the result `runner_lost`.
#include "measure/mpi_fleet.h"
#include "measure/runner.h"

namespace ts {

class MpiRunner : public Runner {
 public:
  explicit MpiRunner(MpiFleet& fleet) : fleet_(fleet) {}
  std::string name() const override { return "mpi"; }
  MeasureResult run(const RunRequest& request, const MeasureOptions& opts, std::vector<Tensor>* outputs) override {
    return fleet_.run(request, opts, outputs);
  }

 private:
  MpiFleet& fleet_;  // outlives the runner
};

}  // namespace ts
