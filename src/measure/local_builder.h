#pragma once
// LocalBuilder: a Builder that compiles on this host, `jobs` forked compiler workers at once
// (compile_batch), into one code cache.
#include "measure/builder.h"

namespace ts {

class LocalBuilder : public Builder {
 public:
  // jobs: compiler processes at once (0 = hardware threads).
  LocalBuilder(CodeCache cache, int jobs) : cache_(std::move(cache)), jobs_(jobs) {}
  std::string name() const override { return "local"; }
  const CodeCache& cache() const { return cache_; }
  std::vector<CompileOutcome> build(const std::vector<CompileJob>& jobs, double timeout_s) override;
  bool has(const Workload& w, const std::string& schedule_hash) const override { return cache_.has_entry(w, schedule_hash); }
  void discard(const Workload& w, const std::string& schedule_hash) override;

 private:
  CodeCache cache_;  // where the code goes
  int jobs_ = 0;     // compiler processes at once
};

}  // namespace ts
