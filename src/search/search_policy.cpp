#include "search/search_policy.h"

#include <fmt/format.h>

#include "graph/error.h"
#include "search/gbt_sa_search.h"
#include "search/halide_autoscheduler.h"
#include "search/random_search.h"

namespace ts {

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = {"random",           "gbt-sa", "adams2019",
                                                 "adams2019-greedy", "li2018", "mullapudi2016"};
  return names;
}

std::unique_ptr<SearchPolicy> make_policy(const std::string& name) { return make_policy(name, GbtSaOptions{}); }

std::unique_ptr<SearchPolicy> make_policy(const std::string& name, const GbtSaOptions& gbt) {
  if (name == "random") return std::make_unique<RandomSearch>();
  if (name == "gbt-sa") return std::make_unique<GbtSaSearch>(gbt);
  for (const auto& n : halide_policy_names())
    if (n == name) return std::make_unique<HalideAutoschedulerPolicy>(name);
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(fmt::format("unknown search policy '{}' (known: {})", name, known));
}

}  // namespace ts
