#include "measure/local_builder.h"

#include <filesystem>

namespace ts {

std::vector<CompileOutcome> LocalBuilder::build(const std::vector<CompileJob>& jobs, double timeout_s) {
  return compile_batch(jobs, cache_, {jobs_, timeout_s});
}

void LocalBuilder::discard(const Workload& w, const std::string& schedule_hash) {
  for (const std::string& f : cache_.entry_files(w, schedule_hash)) {
    std::error_code ec;
    std::filesystem::remove(f, ec);
  }
}

}  // namespace ts
