#include "search/halide_autoscheduler.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "graph/error.h"
#include "measure/worker_pool.h"
#include "measure/workload_compiler.h"
#include "schedule/autoscheduler.h"
#include "schedule/schedule_reader.h"

namespace ts {

namespace {

constexpr int kDropoutPercent = 90;      // chance of keeping a state in randomized reruns
constexpr int kMaxSeeds = 1000;          // reruns tried per task before giving up on new schedules
constexpr double kMinChoiceS = 1;        // a run with less time left than this before the deadline is not started

}  // namespace

std::optional<Schedule> autoscheduler_choice(const Workload& w, const Schedule& recipe, std::string& why,
                                             double timeout_s) {
  if (!recipe.autoscheduler) throw Error("autoscheduler_choice: not an autoscheduler recipe");
  WorkerPoolOptions pool;
  pool.timeout_s = timeout_s;
  pool.capture_stderr = true;
  const WorkerResult r = run_workers(
      1,
      [&](size_t, int fd) {
        LoweredWorkload lw = lower_workload(w);
        apply(recipe, lw.outputs, host_code_target());
        std::string reason;
        const std::optional<Schedule> s = read_halide_schedule(lw.outputs, reason);
        write_all(fd, s ? "data\n" + s->to_json() : "refused\n" + reason);
        return 0;
      },
      pool)[0];
  const size_t eol = r.message.find('\n');
  if (!r.exited_ok || eol == std::string::npos) {
    why = fmt::format("{}: {}{}", recipe.autoscheduler->name, r.describe_end(pool.timeout_s),
                      r.message.empty() ? "" : ": " + message_tail(r.message));
    return std::nullopt;
  }
  if (r.message.compare(0, eol, "data") != 0) {
    why = fmt::format("{}: {}", recipe.autoscheduler->name, r.message.substr(eol + 1));
    return std::nullopt;
  }
  Schedule s = Schedule::from_json(r.message.substr(eol + 1));
  s.origin = ScheduleOrigin{recipe.autoscheduler->name, recipe.autoscheduler->params};
  return s;
}

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
  auto seconds_left = [&] {
    if (!task.deadline) return kAutoschedulerChoiceTimeoutS;
    const double left = std::chrono::duration<double>(*task.deadline - std::chrono::steady_clock::now()).count();
    return std::min(kAutoschedulerChoiceTimeoutS, left);
  };
  // The choice as data when it reads as data, else the recipe. Seeds in order, so a resumed run
  // proposes what it has not measured yet (the same seed makes the same choice).
  auto add = [&](const Schedule& r) {
    if (!fresh(r)) return;  // measured as a recipe by an earlier run
    const double timeout_s = seconds_left();
    if (timeout_s < kMinChoiceS) return;
    std::string why;
    std::optional<Schedule> data = autoscheduler_choice(*task.workload, r, why, timeout_s);
    if (!data && seconds_left() < kMinChoiceS) return;  // the deadline stopped it: not a choice
    if (!data) spdlog::info("{}: {}: proposed as a recipe (no features): {}", policy_, task.workload->name, why);
    Schedule s = data ? *data : r;
    if (fresh(s) && std::none_of(out.begin(), out.end(), [&](const Schedule& o) { return o.hash() == s.hash(); }))
      out.push_back(std::move(s));
  };
  add(recipe(-1));
  if (policy_ == "li2018" || policy_ == "mullapudi2016") return out;
  // A small pipeline gives few distinct choices: stop after as many runs again as were wanted.
  for (int64_t seed = 1, runs = 0;
       out.size() < n && seed <= kMaxSeeds && runs < static_cast<int64_t>(2 * n + 2) && seconds_left() >= kMinChoiceS;
       seed++, runs++)
    add(recipe(seed));
  if (out.size() > n) out.resize(n);
  return out;
}

const std::vector<std::string>& halide_policy_names() {
  static const std::vector<std::string> names = {"adams2019", "adams2019-greedy", "li2018", "mullapudi2016"};
  return names;
}

}  // namespace ts
