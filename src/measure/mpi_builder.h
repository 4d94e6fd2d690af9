#pragma once
// MpiBuilder: a Builder that compiles on the runner ranks of an mpirun, a batch spread over them
// (measure/mpi_fleet.h); paired with an MpiRunner over the same fleet.
#include "measure/builder.h"
#include "measure/mpi_fleet.h"

namespace ts {

class MpiBuilder : public Builder {
 public:
  explicit MpiBuilder(MpiFleet& fleet) : fleet_(fleet) {}
  std::string name() const override { return "mpi"; }
  std::vector<CompileOutcome> build(const std::vector<CompileJob>& jobs, double timeout_s) override {
    return fleet_.build(jobs, timeout_s);
  }
  bool has(const Workload& w, const std::string& schedule_hash) const override { return fleet_.has(w, schedule_hash); }
  void discard(const Workload& w, const std::string& schedule_hash) override { fleet_.discard(w, schedule_hash); }

 private:
  MpiFleet& fleet_;  // outlives the builder
};

}  // namespace ts
