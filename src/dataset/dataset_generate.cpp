#include "dataset/dataset_generate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <set>

#include "features/features.h"
#include "graph/error.h"
#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "schedule/schedule_space.h"
#include "search/halide_autoscheduler.h"
#include "tune/tuner.h"

namespace ts {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One distinct workload of the share and the first network that holds it.
struct DatasetTask {
  const Workload* w = nullptr;
  std::string network;
};

// A drawn schedule and the method that drew it.
struct Draw {
  std::string method;
  Schedule schedule;
};

// The spaces a workload's schedules are drawn from (one lowering of it).
struct WorkloadSpaces {
  LoweredWorkload lowered;
  std::unique_ptr<ScheduleSpace> uniform, stratified, sketch;

  explicit WorkloadSpaces(const Workload& w) : lowered(lower_workload(w)) {
    SpaceOptions base;
    base.vector_bytes = native_vector_bytes(host_code_target());
    auto make = [&](Sampling s) {
      SpaceOptions o = space_options_for(w, base);
      o.sampling = s;
      return std::make_unique<ScheduleSpace>(lowered.outputs, host_code_target(), o);
    };
    uniform = make(Sampling::Uniform);
    stratified = make(Sampling::Stratified);
    sketch = make(Sampling::Sketch);
  }
};

uint64_t workload_seed(uint64_t seed, const Workload& w) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(std::hash<std::string>{}(w.exact_key))};
  std::mt19937_64 rng(seq);
  return rng();
}

// `wanted` distinct schedules other than the default (hash `default_hash`), the methods taking
// turns (dataset_methods() after "default"); a method that cannot give a new schedule in a few
// tries leaves its turn to the next. Deterministic in (seed, workload), but for the Adams2019
// searches that `deadline` stops.
std::vector<Draw> draw_schedules(const Workload& w, const WorkloadSpaces& spaces, const std::string& default_hash,
                                 int wanted, uint64_t seed, std::optional<Clock::time_point> deadline) {
  std::mt19937_64 rng(workload_seed(seed, w));
  std::set<std::string> drawn = {default_hash};
  std::vector<Draw> out;
  auto keep = [&](const std::string& method, const Schedule& s) {
    if (!drawn.insert(s.hash()).second) return false;
    out.push_back({method, s});
    return true;
  };
  std::vector<Schedule> adams;  // Adams2019's choices, drawn once for every turn it gets
  bool adams_drawn = false;      // its beam searches ran (each forks a worker: never twice)
  const std::vector<std::string>& methods = dataset_methods();
  const int turns_of_each = (wanted + static_cast<int>(methods.size()) - 2) / static_cast<int>(methods.size() - 1);
  auto draw_one = [&](const std::string& method) -> bool {
    for (int attempt = 0; attempt < 8; attempt++) {
      std::optional<Schedule> s;
      if (method == "rule-sketch") s = spaces.stratified->sample_rule(rng);
      else if (method == "stratified") s = spaces.stratified->sample(rng);
      else if (method == "uniform") s = spaces.uniform->sample(rng);
      else if (method == "loop-sketch" && spaces.sketch->sketch()) s = spaces.sketch->sample(rng);
      else if (method == "adams2019-noise") {
        if (!adams_drawn) {
          adams_drawn = true;
          HalideAutoschedulerPolicy policy("adams2019");
          SearchTask task{&w, spaces.stratified.get(), [&](const std::string& h) { return drawn.count(h) > 0; }, deadline};
          adams = policy.propose(task, static_cast<size_t>(turns_of_each), rng);
          std::reverse(adams.begin(), adams.end());
        }
        if (adams.empty()) return false;
        s = adams.back();
        adams.pop_back();
      }
      if (!s) return false;
      if (keep(method, *s)) return true;
    }
    return false;
  };
  for (int turn = 0, idle = 0; static_cast<int>(out.size()) < wanted && idle < static_cast<int>(methods.size()); turn++) {
    const std::string& method = methods[1 + turn % (methods.size() - 1)];
    idle = draw_one(method) ? 0 : idle + 1;
  }
  return out;
}

// What the database holds of a workload's data set records of `split`: distinct schedule hashes,
// and whether its default is among them.
struct Held {
  std::set<std::string> hashes;
  bool has_default = false;
};

Held held_records(const RecordsDB& db, const Workload& w, const std::string& split) {
  Held h;
  for (const Record& r : db.records(w.exact_key)) {
    if (dataset_split_of(r.policy) != split) continue;
    h.hashes.insert(r.schedule_hash);
    h.has_default |= r.policy == dataset_policy(split, "default");
  }
  return h;
}

// Loads and partitions this rank's networks; records which workloads each holds. The
// partitions own the workloads the tasks point to.
std::vector<DatasetTask> partition_share(const std::vector<DatasetNetwork>& networks, RecordsDB& db,
                                         const DatasetOptions& o, std::deque<Partition>& parts, DatasetSummary& sum) {
  std::vector<DatasetTask> tasks;
  std::set<std::string> seen;
  for (size_t i = 0; i < networks.size(); i++) {
    if (static_cast<int>(i % static_cast<size_t>(o.ranks)) != o.rank) continue;
    sum.networks++;
    try {
      parts.push_back(partition_graph(networks[i].load()));
    } catch (const std::exception& e) {
      sum.failures.push_back(fmt::format("{}: {}", networks[i].name, e.what()));
      continue;
    }
    std::vector<ModelWorkload> held;
    for (const Workload& w : parts.back().workloads) {
      held.push_back({"", workload_entry(w), w.count});
      if (seen.insert(w.exact_key).second) tasks.push_back({&w, networks[i].name});
    }
    if (!held.empty()) db.set_model(networks[i].name, held);
  }
  return tasks;
}

}  // namespace

const std::vector<std::string>& dataset_methods() {
  static const std::vector<std::string> methods = {"default", "rule-sketch", "stratified", "uniform", "loop-sketch",
                                                   "adams2019-noise"};
  return methods;
}

std::string dataset_policy(const std::string& split, const std::string& method) { return split + "/" + method; }

std::string dataset_split_of(const std::string& policy) {
  for (const char* split : {kTrainSplit, kHeldOutSplit}) {
    const std::string prefix = std::string(split) + "/";
    if (policy.rfind(prefix, 0) == 0) return split;
  }
  return "";
}

DatasetSummary generate_dataset(const std::vector<DatasetNetwork>& networks, RecordsDB& db, const DatasetOptions& o,
                                const std::function<void(const std::string&)>& progress) {
  if (o.split != kTrainSplit && o.split != kHeldOutSplit)
    throw Error(fmt::format("dataset generate: split '{}' is neither '{}' nor '{}'", o.split, kTrainSplit, kHeldOutSplit));
  if (o.schedules_per_workload < 1) throw Error("dataset generate: --schedules-per-workload must be at least 1");
  if (o.ranks < 1 || o.rank < 0 || o.rank >= o.ranks)
    throw Error(fmt::format("dataset generate: rank {} of {} ranks", o.rank, o.ranks));
  const auto t0 = Clock::now();
  DatasetSummary sum;
  std::deque<Partition> parts;
  const std::vector<DatasetTask> tasks = partition_share(networks, db, o, parts, sum);
  sum.workloads = static_cast<int>(tasks.size());
  const int k = o.schedules_per_workload;

  // Schedules still to measure, for the ETA (the share's workloads times K, less what is held).
  int64_t left = 0;
  std::vector<Held> held;
  for (const DatasetTask& t : tasks) {
    held.push_back(held_records(db, *t.w, o.split));
    const int have = std::min(k, static_cast<int>(held.back().hashes.size()));
    sum.complete_before += have >= k;
    left += k - have;
  }
  auto out_of_time = [&] {
    return (o.stop && o.stop->load()) || (o.seconds > 0 && seconds_since(t0) >= o.seconds);
  };
  const std::optional<Clock::time_point> deadline =
      o.seconds > 0 ? std::optional(t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds)))
                    : std::nullopt;
  auto report = [&](size_t index, const DatasetTask& t, size_t have) {
    if (!progress) return;
    const double s = seconds_since(t0);
    const double rate = s > 0 ? static_cast<double>(sum.measured_now) / s : 0;
    progress(fmt::format("[{}/{}] {} {} ({}): {}/{} schedules; {} measured, {:.0f}/h, {} left, ETA {:.0f} s",
                         index + 1, tasks.size(), t.network, t.w->key_hash(), t.w->name, have, k, sum.measured_now,
                         3600 * rate, left, rate > 0 ? static_cast<double>(left) / rate : 0));
  };
  auto record = [&](const Workload& w, const Schedule& s, const MeasureResult& m, const std::string& method,
                    const FeatureExtractor& fx) {
    db.add(make_record(w, s, m, dataset_policy(o.split, method), &fx));
    sum.measured_now++;
    sum.methods[method]++;
    left--;
    if (!m.error_kind.empty()) sum.errors[m.error_kind]++;
  };

  for (size_t i = 0; i < tasks.size() && !out_of_time(); i++) {
    const Workload& w = *tasks[i].w;
    Held& h = held[i];
    if (static_cast<int>(h.hashes.size()) >= k) continue;
    try {
      WorkloadSpaces spaces(w);
      FeatureExtractor fx(*spaces.stratified);
      Measurer measurer(w, o.measure);
      const MeasureResult& ref = measurer.reference();
      const Schedule& def = measurer.default_schedule();
      if (!h.has_default && !h.hashes.count(def.hash())) {
        record(w, def, ref, "default", fx);
        h.hashes.insert(def.hash());
      }
      measurer.set_run_timeout(std::max(2.0, ref.median * o.slow_factor * (o.measure.repeats + o.measure.warmup) + 1.0));
      std::vector<Draw> pending;
      const auto adams_end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.adams_seconds));
      for (Draw& d : draw_schedules(w, spaces, def.hash(), k - 1, o.seed, deadline ? std::min(*deadline, adams_end) : adams_end))
        if (!h.hashes.count(d.schedule.hash()) && !db.has(w.exact_key, d.schedule.hash())) pending.push_back(std::move(d));
      const size_t room = static_cast<size_t>(std::max(0, k - static_cast<int>(h.hashes.size())));
      if (pending.size() > room) pending.resize(room);
      for (size_t b = 0; b < pending.size() && !out_of_time(); b += static_cast<size_t>(o.batch)) {
        const size_t e = std::min(pending.size(), b + static_cast<size_t>(o.batch));
        std::vector<Schedule> batch;
        for (size_t j = b; j < e; j++) batch.push_back(pending[j].schedule);
        const double limit = o.seconds > 0 ? std::max(1.0, o.seconds - seconds_since(t0)) : 0;
        const std::vector<MeasureResult> results = measurer.measure_batch(batch, limit);
        for (size_t j = b; j < e; j++) {
          if (results[j - b].cut) continue;
          record(w, pending[j].schedule, results[j - b], pending[j].method, fx);
          h.hashes.insert(pending[j].schedule.hash());
        }
        report(i, tasks[i], h.hashes.size());
      }
      if (pending.empty()) report(i, tasks[i], h.hashes.size());
    } catch (const std::exception& e) {
      sum.failed_workloads++;
      sum.failures.push_back(fmt::format("{}: workload {} ({}): {}", tasks[i].network, w.key_hash(), w.name, e.what()));
      spdlog::warn("{}", sum.failures.back());
    }
  }
  sum.stopped = out_of_time() && left > 0;
  sum.seconds = seconds_since(t0);
  return sum;
}

}  // namespace ts
