#include "dataset/dataset_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "dataset/dataset_generate.h"

namespace ts {

namespace {

// p10, p50, p90, p99 of `v` (nearest rank); empty for an empty list.
std::vector<double> quantiles(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  std::vector<double> out;
  for (double q : {0.10, 0.50, 0.90, 0.99})
    out.push_back(v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))]);
  return out;
}

std::string method_of(const std::string& policy) { return policy.substr(policy.find('/') + 1); }

std::string utc(int64_t us) {
  const std::time_t t = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

}  // namespace

DatasetStats dataset_stats(RecordsDB& db) {
  DatasetStats s;
  const bool was = db.allows_foreign();
  db.set_allow_foreign(true);
  std::vector<double> noise, ratios;
  std::set<std::string> machines, models;
  std::map<std::string, std::vector<double>> by_name;
  int64_t repeats = 0;
  for (const ModelWorkload& m : db.model_workloads()) models.insert(m.model);
  for (const WorkloadEntry& w : db.workloads()) {
    std::set<std::string> splits;
    // Per machine: the default's median and the best other valid median.
    std::map<std::string, std::pair<double, double>> default_best;
    bool counted = false;
    for (const Record& r : db.records(w.exact_key)) {
      const std::string split = dataset_split_of(r.policy);
      if (split.empty()) continue;
      s.records++;
      s.by_split[split]++;
      s.by_method[method_of(r.policy)]++;
      splits.insert(split);
      machines.insert(r.machine);
      s.first_us = s.first_us == 0 ? r.timestamp_us : std::min(s.first_us, r.timestamp_us);
      s.last_us = std::max(s.last_us, r.timestamp_us);
      if (!r.valid()) {
        s.errors[r.error_kind]++;
        continue;
      }
      s.valid++;
      repeats += static_cast<int64_t>(r.times.size());
      if (r.times.size() >= 2) noise.push_back(r.noise);
      auto& [def, best] = default_best[r.machine];
      if (method_of(r.policy) == "default") def = r.median;
      else best = best == 0 ? r.median : std::min(best, r.median);
      counted = true;
    }
    for (const auto& sp : splits) s.workloads_by_split[sp]++;
    if (!counted) continue;
    std::string name = w.name;
    for (size_t start = 0; start <= name.size();) {
      const size_t plus = std::min(name.find('+', start), name.size());
      s.op_histogram[name.substr(start, plus - start)]++;
      start = plus + 1;
    }
    for (const auto& [machine, db_pair] : default_best) {
      const auto [def, best] = db_pair;
      if (def <= 0 || best <= 0) continue;
      const double ratio = def / best;
      s.compared++;
      ratios.push_back(ratio);
      s.default_is_best += ratio <= 1.0;
      s.default_over_2x += ratio > 2.0;
      by_name[w.name].push_back(std::log(std::max(ratio, 1e-9)));
    }
  }
  db.set_allow_foreign(was);
  s.networks = static_cast<int>(models.size());
  s.machines = static_cast<int>(machines.size());
  s.noise_quantiles = quantiles(noise);
  s.default_quantiles = quantiles(ratios);
  s.mean_repeats = s.valid > 0 ? static_cast<double>(repeats) / static_cast<double>(s.valid) : 0;
  for (const auto& [name, logs] : by_name) {
    double sum = 0;
    for (double l : logs) sum += l;
    s.worst_classes.push_back({name, static_cast<int>(logs.size()), std::exp(sum / static_cast<double>(logs.size()))});
  }
  std::sort(s.worst_classes.begin(), s.worst_classes.end(),
            [](const auto& a, const auto& b) { return a.geomean > b.geomean; });
  if (s.worst_classes.size() > 8) s.worst_classes.resize(8);
  return s;
}

std::string format_dataset_stats(const DatasetStats& s) {
  auto counts = [](const auto& m) {
    std::string out;
    for (const auto& [k, v] : m) out += fmt::format(" {}:{}", k, v);
    return out.empty() ? std::string(" none") : out;
  };
  auto qs = [](const std::vector<double>& q, const char* unit) {
    return q.empty() ? std::string("none")
                     : fmt::format("p10 {:.3g}{u}, p50 {:.3g}{u}, p90 {:.3g}{u}, p99 {:.3g}{u}", q[0], q[1], q[2], q[3],
                                   fmt::arg("u", unit));
  };
  std::string out = fmt::format("{} records ({} valid, {:.1f} repeats each) of {} networks on {} machine(s)\n", s.records,
                                s.valid, s.mean_repeats, s.networks, s.machines);
  out += fmt::format("by split:{}; workloads by split:{}\n", counts(s.by_split), counts(s.workloads_by_split));
  out += fmt::format("by method:{}\nerrors:{}\n", counts(s.by_method), counts(s.errors));
  if (s.records > 0) out += fmt::format("measured {} to {}\n", utc(s.first_us), utc(s.last_us));
  out += fmt::format("noise (max - min) / mean: {}\n", qs(s.noise_quantiles, ""));
  std::vector<std::pair<std::string, int>> ops(s.op_histogram.begin(), s.op_histogram.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string hist;
  for (const auto& [op, n] : ops) hist += fmt::format(" {}:{}", op, n);
  out += fmt::format("ops (workloads holding each):{}\n", hist.empty() ? " none" : hist);
  out += fmt::format("default / best sampled over {} workloads: {}; default best in {}, best > 2x faster in {}\n",
                     s.compared, qs(s.default_quantiles, "x"), s.default_is_best, s.default_over_2x);
  for (const auto& c : s.worst_classes)
    out += fmt::format("  {:<32} {:>4} workloads, geomean default / best {:.2f}x\n", c.name, c.workloads, c.geomean);
  return out;
}

}  // namespace ts
