#include "search/search_policy.h"

#include <fmt/format.h>

#include "graph/error.h"
#include "search/halide_autoscheduler.h"
#include "search/random_search.h"

namespace ts {

std::unique_ptr<SearchPolicy> make_policy(const std::string& name) {
  if (name == "random") return std::make_unique<RandomSearch>();
  for (const auto& n : policy_names())
    if (n == name) return std::make_unique<HalideAutoschedulerPolicy>(name);
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(fmt::format("unknown search policy '{}' (known: {})", name, known));
}

}  // namespace ts
