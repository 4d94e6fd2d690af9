#pragma once
// Builder: the first half of a measurement. It compiles a batch of (workload, schedule) jobs into
// the verified code cache (measure/workload_compiler.h), where a Runner (measure/runner.h) finds
// the code by the same keys. A job that fails, crashes the compiler or runs past its timeout is a
// result with its reason, never an exception. One implementation per file: LocalBuilder (forked
// compiler workers on this host).
#include <string>
#include <vector>

#include "measure/workload_compiler.h"

namespace ts {

class Builder {
 public:
  virtual ~Builder() = default;
  // "local", ...: what progress lines and errors call it.
  virtual std::string name() const = 0;
  // The code cache the builds go into (a Runner reads it).
  virtual const CodeCache& cache() const = 0;
  // Compiles every job (at most `timeout_s` each; 0 = none); outcomes in job order.
  virtual std::vector<CompileOutcome> build(const std::vector<CompileJob>& jobs, double timeout_s) = 0;
};

}  // namespace ts
