#pragma once
// LocalRunner: a Runner that runs each candidate in a fresh forked worker on this host, one at a
// time (timings must not disturb each other), reading code from one code cache.
#include "measure/runner.h"
#include "measure/workload_compiler.h"

namespace ts {

class LocalRunner : public Runner {
 public:
  explicit LocalRunner(CodeCache cache) : cache_(std::move(cache)) {}
  std::string name() const override { return "local"; }
  MeasureResult run(const RunRequest& request, const MeasureOptions& opts, std::vector<Tensor>* outputs) override;

 private:
  CodeCache cache_;  // where built code is found
};

}  // namespace ts
