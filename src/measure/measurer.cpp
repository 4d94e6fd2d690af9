#include "measure/measurer.h"
#include "measure/time_stats.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "graph/error.h"
#include "measure/local_builder.h"
#include "measure/local_runner.h"
#include "measure/spinning_pool.h"
#include "measure/workload_code.h"
#include "measure/workload_compiler.h"
#include "schedule/default_schedule.h"

namespace ts {

using Clock = std::chrono::steady_clock;

void summarize_times(MeasureResult& r) {
  const TimeStats st = time_stats(r.times);
  r.median = st.median;
  r.min = st.min;
  r.noise = st.noise;
}

struct Measurer::Impl {
  std::unique_ptr<Builder> builder;         // compiles candidates into its code cache
  std::unique_ptr<Runner> runner;           // runs them from there
  std::map<std::string, Tensor> inputs;     // random_inputs(w.graph, input_seed): weights included
  std::vector<Tensor> reference_outputs;    // the default schedule's outputs on `inputs`
  MeasureResult reference;                  // the default schedule's measurement
  LoweredWorkload unscheduled;              // the workload lowered once, for Schedule::validate
  Schedule default_schedule;                // the default rule's schedule of the workload (the reference's)
  std::string default_hash;                 // its hash: the reference's code in the cache

  // "workload <key> (<name>)" for messages.
  std::string what;

  // Compiles each of `jobs` with opts' compile timeout; per job "" or the compile_error
  // message, and its compile seconds.
  std::vector<CompileOutcome> compile(const std::vector<CompileJob>& jobs, const MeasureOptions& opts) const {
    return builder->build(jobs, opts.compile_timeout_s);
  }
  // Runs compiled code in a fresh worker (inputs packed by `layouts`); `outputs` (when given)
  // receives the outputs instead of checking them against the reference.
  MeasureResult run(const Workload& w, const std::string& hash, const std::vector<InputLayout>& layouts,
                    const MeasureOptions& opts, InjectedFault fault, std::vector<Tensor>* outputs) const {
    RunRequest request{&w, hash, layouts, &inputs, outputs ? nullptr : &reference_outputs, fault};
    return runner->run(request, opts, outputs);
  }
};

Measurer::Measurer(const Workload& w, MeasureOptions opts) : Measurer(w, std::move(opts), nullptr, nullptr) {}

Measurer::Measurer(const Workload& w, MeasureOptions opts, std::unique_ptr<Builder> builder, std::unique_ptr<Runner> runner)
    : w_(w), opts_(std::move(opts)), impl_(new Impl) {
  try {
    Impl& m = *impl_;
    m.what = fmt::format("workload {} ({})", w_.key_hash(), w_.name);
    if (!builder || !runner) {
      const CodeCache cache = CodeCache::open_default(host_code_target(), opts_.cache_root);
      if (!builder) builder = std::make_unique<LocalBuilder>(cache, opts_.compile_jobs);
      if (!runner) runner = std::make_unique<LocalRunner>(cache);
    }
    m.builder = std::move(builder);
    m.runner = std::move(runner);
    m.inputs = random_inputs(w_.graph, opts_.input_seed);
    m.unscheduled = lower_workload(w_);
    m.default_schedule = ts::default_schedule(m.unscheduled.outputs, host_code_target());  // reads the Funcs only
    m.default_hash = m.default_schedule.hash();

    double seconds = 0;
    if (!m.builder->has(w_, m.default_hash)) {
      CompileOutcome o =
          m.compile({{&w_, schedule_fn(m.default_schedule), m.default_hash, {}, m.default_schedule.to_json()}}, opts_)[0];
      if (!o.error.empty())
        throw Error(fmt::format("{}: the default schedule (the reference) does not compile: {}", m.what, o.error));
      seconds = o.seconds;
    }
    m.reference = m.run(w_, m.default_hash, {}, opts_, InjectedFault::None, &m.reference_outputs);
    m.reference.compile_seconds = seconds;
    if (!m.reference.valid())
      throw Error(fmt::format("the default schedule (the reference) failed to run ({}): {}", m.reference.error_kind,
                              m.reference.error_message));
  } catch (...) {
    delete impl_;
    throw;
  }
}

Measurer::~Measurer() { delete impl_; }

const MeasureResult& Measurer::reference() { return impl_->reference; }

const Schedule& Measurer::default_schedule() const { return impl_->default_schedule; }

std::vector<MeasureResult> Measurer::measure_batch(const std::vector<Schedule>& batch, double limit_s) {
  Impl& m = *impl_;
  const auto batch_t0 = Clock::now();
  MeasureOptions compile_opts = opts_;
  const bool limited_compile = limit_s > 0 && (opts_.compile_timeout_s <= 0 || limit_s < opts_.compile_timeout_s);
  if (limited_compile) compile_opts.compile_timeout_s = limit_s;
  std::vector<MeasureResult> results(batch.size());
  std::map<std::string, size_t> first_of_hash;  // a schedule repeated in the batch is measured once
  std::vector<size_t> to_compile;
  for (size_t i = 0; i < batch.size(); i++) {
    MeasureResult& r = results[i];
    r.schedule_hash = batch[i].hash();
    if (!first_of_hash.emplace(r.schedule_hash, i).second) continue;
    std::optional<std::string> why;
    try {
      why = batch[i].validate(m.unscheduled.outputs);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why) {
      r.error_kind = "invalid_schedule";
      r.error_message = fmt::format("{}: {}", m.what, *why);
      continue;
    }
    to_compile.push_back(i);
  }

  // Code this batch creates is removed after the runs (unless keep_code); code already in the
  // cache (e.g. a tuned schedule a model uses) is left alone.
  std::vector<CompileJob> jobs;
  std::vector<std::string> created;  // hashes
  for (size_t i : to_compile) {
    const std::string& hash = results[i].schedule_hash;
    jobs.push_back({&w_, schedule_fn(batch[i]), hash, batch[i].layouts, batch[i].to_json()});
    if (hash != m.default_hash && !m.builder->has(w_, hash)) created.push_back(hash);
  }
  const auto compile_t0 = Clock::now();
  std::vector<CompileOutcome> compiled = m.compile(jobs, compile_opts);
  const double compile_s = std::chrono::duration<double>(Clock::now() - compile_t0).count();
  const auto run_t0 = Clock::now();

  // Runs one at a time: concurrent runs would disturb each other's timings.
  for (size_t k = 0; k < to_compile.size(); k++) {
    MeasureResult& r = results[to_compile[k]];
    const double elapsed = std::chrono::duration<double>(Clock::now() - batch_t0).count();
    if (limit_s > 0 && (elapsed >= limit_s || (limited_compile && !compiled[k].error.empty() &&
                                               compiled[k].seconds >= 0.95 * limit_s))) {
      r.cut = true;  // a compile stopped by the limit says nothing about the schedule
      r.error_message = fmt::format("{}: not measured: the batch's {:.1f} s ran out", m.what, limit_s);
    } else if (!compiled[k].error.empty()) {
      r.error_kind = compiled[k].error_kind.empty() ? "compile_error" : compiled[k].error_kind;
      r.error_message = compiled[k].error;
    } else {
      auto fault = opts_.faults.find(r.schedule_hash);
      r = m.run(w_, r.schedule_hash, batch[to_compile[k]].layouts, opts_, fault == opts_.faults.end() ? InjectedFault::None : fault->second,
                nullptr);
    }
    r.compile_seconds = compiled[k].seconds;
  }
  spdlog::debug("{}: batch of {}: {} compiled in {:.2f} s, run in {:.2f} s", m.what, batch.size(), jobs.size(),
                compile_s, std::chrono::duration<double>(Clock::now() - run_t0).count());
  for (size_t i = 0; i < batch.size(); i++) results[i] = results[first_of_hash.at(results[i].schedule_hash)];

  if (!opts_.keep_code)
    for (const std::string& hash : created) m.builder->discard(w_, hash);
  return results;
}

Measurer::Remeasurement Measurer::remeasure_against_default(const Schedule& s, int rounds) {
  Impl& m = *impl_;
  Remeasurement out;
  out.default_result.schedule_hash = m.default_hash;
  out.candidate.schedule_hash = s.hash();
  out.default_result.threads = out.candidate.threads = effective_threads(opts_.threads);
  const std::string& hash = out.candidate.schedule_hash;
  MeasureOptions every_repeat = opts_;  // a confirmation pair times every repeat of both
  every_repeat.loser_s = 0;
  const bool created = hash != m.default_hash && !m.builder->has(w_, hash);
  CompileOutcome compiled = m.compile({{&w_, schedule_fn(s), hash, s.layouts, s.to_json()}}, opts_)[0];
  if (!compiled.error.empty()) {
    out.candidate.error_kind = compiled.error_kind.empty() ? "compile_error" : compiled.error_kind;
    out.candidate.error_message = compiled.error;
    return out;
  }
  for (int r = 0; r < rounds && out.candidate.valid() && out.default_result.valid(); r++)
    for (int k = 0; k < 2; k++) {
      const bool candidate = (k == 0) == (r % 2 == 1);  // default first in even rounds
      MeasureResult& into = candidate ? out.candidate : out.default_result;
      MeasureResult x = candidate ? m.run(w_, hash, s.layouts, every_repeat, InjectedFault::None, nullptr)
                                  : m.run(w_, m.default_hash, {}, every_repeat, InjectedFault::None, nullptr);
      if (!x.valid()) {
        x.schedule_hash = into.schedule_hash;
        into = x;
        break;
      }
      into.times.insert(into.times.end(), x.times.begin(), x.times.end());
    }
  for (MeasureResult* r : {&out.default_result, &out.candidate}) {
    if (!r->valid()) r->times.clear();
    summarize_times(*r);
  }
  if (created && !opts_.keep_code) m.builder->discard(w_, hash);
  return out;
}

int effective_threads(int threads) { return threads > 0 ? threads : default_pool_threads(); }

}  // namespace ts
