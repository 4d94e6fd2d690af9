#include "measure/local_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <nlohmann/json.hpp>

#include "measure/cache_flush.h"
#include "measure/worker_pool.h"
#include "measure/workload_code.h"

namespace ts {

namespace {

using Clock = std::chrono::steady_clock;

// What one run worker does with the workload's outputs after the timed runs.
struct RunCheck {
  const std::vector<Tensor>* reference = nullptr;  // compare with these; null: send the outputs back
  double rtol = 0;                                  // tolerance of the comparison (MeasureOptions)
  double atol = 0;
  double stol = 0;
};

// The run worker (a forked child): loads the runtime and the code, warm-up and timed runs, the
// output check. Reports one JSON line {"times", "error_kind", "error_message"}, followed (when
// sending outputs back) by the raw bytes of every output in order. Returns its exit code.
int run_in_worker(int message_fd, const Workload& w, const CodeCache& cache, const std::string& schedule_hash,
                  const std::vector<InputLayout>& layouts, const std::map<std::string, Tensor>& inputs,
                  const MeasureOptions& opts, InjectedFault fault, const RunCheck& check) {
  load_halide_runtime(cache.ensure_runtime());
  if (opts.threads > 0) set_halide_threads(opts.threads);
  WorkloadCode code(cache, w, schedule_hash);
  WorkloadCall call(w, inputs, layouts);  // packing is load-time work: not timed

  nlohmann::json report = {{"times", nlohmann::json::array()}, {"error_kind", ""}, {"error_message", ""}};
  auto send = [&](const std::string& payload) { return write_all(message_fd, report.dump() + "\n" + payload) ? 0 : 1; };
  // The weights' buffers (packed ones as packed), evicted before every run when cold_weights.
  std::vector<const Tensor*> weights;
  if (opts.cold_weights)
    for (size_t i = 0; i < w.graph.inputs.size(); i++)
      if (std::find(w.constant_inputs.begin(), w.constant_inputs.end(), w.graph.inputs[i]) != w.constant_inputs.end())
        weights.push_back(&call.inputs[i]);
  auto evict_weights = [&] {
    for (const Tensor* t : weights) evict_from_caches(t->bytes.data(), t->bytes.size());
  };
  int calls = 0;
  auto invoke = [&] {
    int rc = code.call(call.argv.data());
    if (++calls == 1 && fault == InjectedFault::Segfault) {
      static volatile int* volatile null_pointer = nullptr;  // volatile: the compiler cannot drop the store
      *null_pointer = 1;
    }
    if (calls == 1 && fault == InjectedFault::Hang)
      for (volatile bool forever = true; forever;) {
      }
    return rc;
  };
  auto halide_failed = [&](int rc, const std::string& which) {
    report["error_kind"] = "runtime_error";
    const std::string why = take_halide_error();
    report["error_message"] = fmt::format("Halide error {} in {}{}", rc, which, why.empty() ? "" : ": " + why);
    return send("");
  };

  for (int i = 0; i < opts.warmup; i++) {
    evict_weights();
    if (int rc = invoke()) return halide_failed(rc, fmt::format("warm-up run {}", i + 1));
  }
  for (int i = 0; i < opts.repeats; i++) {
    evict_weights();
    auto t0 = Clock::now();
    int rc = invoke();
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (rc) return halide_failed(rc, fmt::format("timed run {}", i + 1));
    report["times"].push_back(seconds);
    if (i == 0 && opts.loser_s > 0 && seconds > opts.loser_s) break;
  }
  if (fault == InjectedFault::WrongValues && !call.outputs.empty() && call.outputs[0].size() > 0)
    call.outputs[0].set_f64(0, call.outputs[0].get_f64(0) + 1);

  if (!check.reference) return send(concat_tensor_bytes(call.outputs));
  for (size_t k = 0; k < call.outputs.size(); k++) {
    const Tensor& ref = (*check.reference)[k];
    double scale = 0;  // the largest finite |reference value|
    for (int64_t i = 0; i < ref.size(); i++)
      if (std::isfinite(ref.get_f64(i))) scale = std::max(scale, std::fabs(ref.get_f64(i)));
    Comparison c = compare_tensors(call.outputs[k], ref, check.rtol, check.atol + check.stol * scale);
    if (c.ok) continue;
    report["error_kind"] = "wrong_answer";
    report["error_message"] = fmt::format("output {} differs from the default schedule's: {} (max abs error {:.3g}, "
                                          "values up to {:.3g}, rtol {:g}, atol {:g} + {:g} x that)",
                                          w.graph.outputs[k], c.message, c.max_abs_error, c.max_abs_want, check.rtol, check.atol,
                                          check.stol);
    report["times"] = nlohmann::json::array();
    break;
  }
  return send("");
}

}  // namespace

MeasureResult LocalRunner::run(const RunRequest& request, const MeasureOptions& opts, std::vector<Tensor>* outputs) {
  const Workload& w = *request.workload;
  const std::string& hash = request.schedule_hash;
  const std::string what = fmt::format("workload {} ({})", w.key_hash(), w.name);
  WorkerPoolOptions pool;
  pool.timeout_s = opts.run_timeout_s;
  pool.capture_stderr = true;  // Halide's runtime prints its error text there
  RunCheck check{request.reference, opts.rtol, opts.atol, opts.stol};
  stop_halide_threads();  // the child must start its own (a CompiledModel in this process may have some)
  WorkerResult r = run_workers(
      1, [&](size_t, int fd) { return run_in_worker(fd, w, cache_, hash, request.layouts, *request.inputs, opts, request.fault, check); }, pool)[0];

  MeasureResult m;
  m.schedule_hash = hash;
  m.threads = effective_threads(opts.threads);
  const std::string halide_text = r.stderr_tail.empty() ? "" : ": " + message_tail(r.stderr_tail);
  if (r.timed_out) {
    m.error_kind = "timeout";
    m.error_message = fmt::format("{}: run worker timed out after {:g} s ({} warm-up + {} timed runs)", what,
                                  opts.run_timeout_s, opts.warmup, opts.repeats);
    return m;
  }
  if (r.signal) {
    m.error_kind = "crash";
    m.error_message = fmt::format("{}: run worker {}{}", what, r.describe_end(0), halide_text);
    return m;
  }
  const size_t eol = r.message.find('\n');
  nlohmann::json report = nlohmann::json::parse(r.message.substr(0, eol), nullptr, false);
  if (!r.exited_ok || eol == std::string::npos || report.is_discarded()) {
    // The worker could not load or call the code (it threw): not a measurement.
    m.error_kind = "runtime_error";
    m.error_message = fmt::format("{}: run worker failed ({}): {}{}", what, r.describe_end(0),
                                  message_tail(r.message, kMessageChars / 2), halide_text);
    return m;
  }
  m.times = report.value("times", std::vector<double>{});
  m.error_kind = report.value("error_kind", "");
  m.error_message = report.value("error_message", "");
  if (!m.error_message.empty()) m.error_message = what + ": " + m.error_message;
  if (m.error_kind == "runtime_error") m.error_message += halide_text;
  if (!m.valid()) m.times.clear();
  summarize_times(m);

  if (!request.reference && outputs && m.valid()) {
    std::string why;
    std::optional<std::vector<Tensor>> got = outputs_from_bytes(w, std::string_view(r.message).substr(eol + 1), why);
    if (!got) {
      m.error_kind = "runtime_error";
      m.error_message = fmt::format("{}: run worker sent {}", what, why);
      return m;
    }
    *outputs = std::move(*got);
  }
  return m;
}

}  // namespace ts
