#pragma once
// Builder: the first half of a measurement. It compiles a batch of (workload, schedule) jobs into
// a verified code cache (measure/workload_compiler.h) where the Runner it is paired with
// (measure/runner.h) finds the code by the same keys. A job that fails, crashes the compiler or runs past its timeout is a
// result with its reason, never an exception. One implementation per file: LocalBuilder (forked
// compiler workers on this host), MpiBuilder (the ranks of an mpirun, measure/mpi_fleet.h).
#include <string>
#include <vector>

#include "measure/workload_compiler.h"

namespace ts {

class Builder {
 public:
  virtual ~Builder() = default;
  // "local", ...: what progress lines and errors call it.
  virtual std::string name() const = 0;
  // Compiles every job (at most `timeout_s` each; 0 = none); outcomes in job order.
  virtual std::vector<CompileOutcome> build(const std::vector<CompileJob>& jobs, double timeout_s) = 0;
  // Whether (w, schedule_hash) is built and intact where it will run.
  virtual bool has(const Workload& w, const std::string& schedule_hash) const = 0;
  // Removes that code (a candidate measured once is not kept).
  virtual void discard(const Workload& w, const std::string& schedule_hash) = 0;
};

}  // namespace ts
