#include "search/halide_autoscheduler.h"

#include <fmt/format.h>

#include "graph/error.h"
#include "schedule/autoscheduler.h"

namespace ts {

namespace {

constexpr int kDropoutPercent = 90;   // chance of keeping a state in randomized reruns
constexpr int kMaxSeeds = 1000;       // reruns tried per task before giving up on new schedules

}  // namespace

HalideAutoschedulerPolicy::HalideAutoschedulerPolicy(std::string policy) : policy_(std::move(policy)) {
  if (policy_ != "adams2019" && policy_ != "adams2019-greedy" && policy_ != "li2018" && policy_ != "mullapudi2016")
    throw Error(fmt::format("'{}' is not a Halide autoscheduler policy", policy_));
}

Schedule HalideAutoschedulerPolicy::recipe(int64_t seed) const {
  Schedule s;
  AutoschedulerRecipe r;
  if (policy_ == "li2018") r.name = "Li2018";
  else if (policy_ == "mullapudi2016") r.name = "Mullapudi2016";
  else {
    r.name = "Adams2019";
    if (policy_ == "adams2019-greedy") {
      r.params["beam_size"] = "1";
      r.params["num_passes"] = "1";
    }
    if (seed >= 0) {
      r.params["random_dropout"] = std::to_string(kDropoutPercent);
      r.params["random_dropout_seed"] = std::to_string(seed);
    }
  }
  // This machine's parameters, written into the recipe so that it replays the same elsewhere.
  const Halide::MachineParams mp = recipe_machine_params(r);
  r.params["parallelism"] = std::to_string(mp.parallelism);
  r.params["last_level_cache_size"] = std::to_string(mp.last_level_cache_size);
  s.autoscheduler = r;
  return s;
}

std::vector<Schedule> HalideAutoschedulerPolicy::propose(const SearchTask& task, size_t n, std::mt19937_64& rng) {
  std::vector<Schedule> out;
  auto fresh = [&](const Schedule& s) { return !task.measured || !task.measured(s.hash()); };
  Schedule first = recipe(-1);
  if (fresh(first)) out.push_back(first);
  if (policy_ == "li2018" || policy_ == "mullapudi2016") return out;
  // Randomized reruns: seeds in order, so a resumed run proposes what it has not measured yet.
  for (int64_t seed = 1; out.size() < n && seed <= kMaxSeeds; seed++) {
    Schedule s = recipe(seed);
    if (fresh(s)) out.push_back(s);
  }
  if (out.size() > n) out.resize(n);
  return out;
}

const std::vector<std::string>& halide_policy_names() {
  static const std::vector<std::string> names = {"adams2019", "adams2019-greedy", "li2018", "mullapudi2016"};
  return names;
}

}  // namespace ts
