#include "tune/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>

#include "measure/time_stats.h"
#include "tune/tuner.h"

namespace ts {

namespace {

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string ms(double s) { return s > 0 ? fmt::format("{:.3f}", s * 1e3) : "-"; }

// What the report says about one workload.
struct WorkloadRow {
  WorkloadEntry entry;
  int count = 1;                      // occurrences in the model (1 without a model)
  std::vector<Record> records;        // oldest first
  double default_s = 0;               // the default's time (confirmed when re-measured)
  double chosen_s = 0;                // what run / compile would use
  bool confirmed = false;             // chosen_s comes from a re-measurement against the default (or is the default's)
  double spread = 0;                  // of the times behind chosen_s
  std::map<std::string, int> errors;  // error kind -> records
};

WorkloadRow summarize(const RecordsDB& db, const WorkloadEntry& e, int count) {
  WorkloadRow r;
  r.entry = e;
  r.count = count;
  r.records = db.records(e.exact_key);
  for (const auto& rec : r.records) {
    if (!rec.valid()) r.errors[rec.error_kind]++;
    if (rec.valid() && r.default_s == 0 && is_default_record(rec)) r.default_s = rec.median;
  }
  // What `run` with the default thread count uses.
  if (auto c = latest_confirmation(db, e.exact_key, effective_threads(0))) {
    const Record& used = c->faster() ? c->candidate : c->default_record;
    r.default_s = c->default_record.median;
    r.chosen_s = used.median;
    r.spread = time_stats(used.times).spread;
    r.confirmed = true;
  } else if (auto best = db.best(e.exact_key, 1); !best.empty()) {
    r.chosen_s = best[0].median;
    r.spread = time_stats(best[0].times).spread;
    r.confirmed = is_default_record(best[0]);  // the default needs no confirmation
  }
  return r;
}

// A line chart as inline SVG: points (x, y) joined, axes labelled with their ranges.
std::string svg_line(const std::vector<std::pair<double, double>>& pts, const std::string& x_label,
                     const std::string& y_label, int width = 360, int height = 140) {
  if (pts.empty()) return "<svg class=\"chart\" width=\"1\" height=\"1\"></svg>";
  double x0 = pts.front().first, x1 = pts.front().first, y0 = pts.front().second, y1 = pts.front().second;
  for (const auto& [x, y] : pts) {
    x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 * 1.1 + 1e-12;
  const int left = 60, bottom = 28, top = 8, right = 8;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (width - left - right); };
  auto py = [&](double y) { return top + (1 - (y - y0) / (y1 - y0)) * (height - top - bottom); };
  std::string path;
  for (const auto& [x, y] : pts) path += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
  return fmt::format(
      "<svg class=\"chart\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\">"
      "<line x1=\"{2}\" y1=\"{3}\" x2=\"{4}\" y2=\"{3}\" stroke=\"#888\"/>"
      "<line x1=\"{2}\" y1=\"{5}\" x2=\"{2}\" y2=\"{3}\" stroke=\"#888\"/>"
      "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"{6}\"/>"
      "<text x=\"{2}\" y=\"{7}\" font-size=\"10\">{8:.4g}</text>"
      "<text x=\"{4}\" y=\"{7}\" font-size=\"10\" text-anchor=\"end\">{9:.4g} {10}</text>"
      "<text x=\"2\" y=\"{11}\" font-size=\"10\">{12:.4g}</text>"
      "<text x=\"2\" y=\"{3}\" font-size=\"10\">{13:.4g}</text>"
      "<text x=\"2\" y=\"{14}\" font-size=\"10\">{15}</text></svg>",
      width, height, left, height - bottom, width - right, top, path, height - 8, x0, x1, escape_html(x_label),
      top + 10, y1, y0, (height - bottom) / 2 + top, escape_html(y_label));
}

// Best valid median so far, in ms, by measurement number.
std::vector<std::pair<double, double>> tuning_curve(const WorkloadRow& r) {
  std::vector<std::pair<double, double>> pts;
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < r.records.size(); i++) {
    if (r.records[i].valid() && !is_confirmation_policy(r.records[i].policy)) best = std::min(best, r.records[i].median);
    if (std::isfinite(best)) pts.push_back({static_cast<double>(i + 1), best * 1e3});
  }
  return pts;
}

// The model's estimated latency (sum of count x best time so far) over tuning time, from the
// timestamps of every workload's records; only once every workload has a valid time.
std::vector<std::pair<double, double>> model_curve(const std::vector<WorkloadRow>& rows) {
  std::vector<std::tuple<int64_t, size_t, double>> events;  // time, workload, median
  for (size_t w = 0; w < rows.size(); w++)
    for (const auto& rec : rows[w].records)
      if (rec.valid() && !is_confirmation_policy(rec.policy)) events.emplace_back(rec.timestamp_us, w, rec.median);
  std::sort(events.begin(), events.end());
  std::vector<double> best(rows.size(), std::numeric_limits<double>::infinity());
  std::vector<std::pair<double, double>> pts;
  if (events.empty()) return pts;
  const int64_t t0 = std::get<0>(events.front());
  for (const auto& [t, w, median] : events) {
    best[w] = std::min(best[w], median);
    double total = 0;
    for (size_t k = 0; k < rows.size(); k++) total += rows[k].count * best[k];
    if (std::isfinite(total)) pts.push_back({(t - t0) * 1e-6, total * 1e3});
  }
  return pts;
}

}  // namespace

std::string tuning_report_html(const RecordsDB& db, const ReportOptions& opts) {
  std::vector<WorkloadRow> rows;
  if (opts.model) {
    for (const auto& w : opts.model->workloads) rows.push_back(summarize(db, workload_entry(w), w.count));
  } else {
    for (const auto& e : db.workloads()) rows.push_back(summarize(db, e, 1));
  }
  const std::string title = opts.model ? fmt::format("{}: {}", opts.title, opts.model_name) : opts.title;
  std::string h = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title><style>"
      "body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}"
      "td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}td.l,th.l{{text-align:left}}"
      ".bad{{color:#b00}}.chart{{display:block}}</style></head><body>\n<h1>{0}</h1>\n",
      escape_html(title));
  int64_t records = 0;
  for (const auto& r : rows) records += static_cast<int64_t>(r.records.size());
  h += fmt::format("<p id=\"summary\">Database <code>{}</code>: {} workloads, {} records of this machine and build "
                   "({} of other machines or builds {}).</p>\n",
                   escape_html(db.path()), rows.size(), records, db.foreign_count(),
                   db.allows_foreign() ? "included" : "not shown");

  if (opts.model) {
    double def = 0, chosen = 0;
    for (const auto& r : rows) def += r.count * r.default_s, chosen += r.count * (r.chosen_s > 0 ? r.chosen_s : r.default_s);
    h += fmt::format("<h2>Model latency over tuning time</h2>\n<p>Sum over workloads of count x time: defaults {} ms, "
                     "chosen schedules {} ms (estimated from per-workload measurements; "
                     "<code>run --db</code> measures it end to end).</p>\n",
                     ms(def), ms(chosen));
    h += svg_line(model_curve(rows), "s of tuning", "ms", 640, 220) + "\n";
  }

  h += "<h2>Workloads</h2>\n<table id=\"workloads\"><tr><th class=\"l\">workload</th><th class=\"l\">name</th>"
       "<th>count</th><th>default ms</th><th>chosen ms</th><th>speedup</th><th>noise</th><th>records</th>"
       "<th class=\"l\">errors</th><th class=\"l\">tuning curve (best ms by measurement)</th></tr>\n";
  for (const auto& r : rows) {
    std::string errs;
    for (const auto& [k, n] : r.errors) errs += fmt::format("{}{} {}", errs.empty() ? "" : ", ", n, k);
    const double speedup = r.chosen_s > 0 && r.default_s > 0 ? r.default_s / r.chosen_s : 0;
    h += fmt::format(
        "<tr><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}{}</td>"
        "<td>{}</td><td{}>{:.0f}%</td><td>{}</td><td class=\"l bad\">{}</td><td class=\"l\">{}</td></tr>\n",
        r.entry.key_hash.empty() ? fnv1a_hex(r.entry.exact_key) : r.entry.key_hash, escape_html(r.entry.name), r.count,
        ms(r.default_s), ms(r.chosen_s), r.confirmed || r.chosen_s == 0 ? "" : " (unconfirmed)",
        speedup > 0 ? fmt::format("{:.2f}x", speedup) : "-", r.spread > 0.1 ? " class=\"bad\"" : "", r.spread * 100,
        r.records.size(), escape_html(errs), svg_line(tuning_curve(r), "measurements", "ms", 300, 90));
  }
  h += "</table>\n<p>Noise: the spread (interquartile range / median) of the times behind the chosen time; over 10% is "
       "marked. A chosen time is confirmed when tuning re-measured the winner against the default, interleaved.</p>\n"
       "</body></html>\n";
  return h;
}

}  // namespace ts
