#include "measure/local_builder.h"

namespace ts {

std::vector<CompileOutcome> LocalBuilder::build(const std::vector<CompileJob>& jobs, double timeout_s) {
  return compile_batch(jobs, cache_, {jobs_, timeout_s});
}

}  // namespace ts
