// `tensorsched tune MODEL --db FILE`: tune every workload with a search policy, record every
// measurement, and compare the model end to end with its best schedules vs the defaults.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <sys/ioctl.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "measure/mpi_builder.h"
#include "measure/mpi_fleet.h"
#include "measure/mpi_measure_server.h"
#include "measure/mpi_runner.h"
#include "search/gbt_sa_search.h"
#include "tune/reuse.h"
#include "tune/tuner.h"

namespace ts {

namespace {

struct TuneArgs {
  ModelArgs model;
  std::string db_path;
  int trials = 0;
  double seconds = 0;
  std::string policy = "random";
  uint64_t seed = 0;
  int repeats = 10;
  bool warm_weights = false;    // measure with the weights left in the caches between runs
  int jobs = 0;
  int e2e_iters = 20;
  std::string cache_dir;
  bool json = false;
  GbtSaOptions gbt;             // gbt-sa's options (the defaults of AutoTVM's paper where it gives them)
  bool transfer = false;        // gbt-sa with a global model on the database's other workloads
  std::vector<std::string> workloads;  // key hashes to tune (empty = all)
  std::string sampling = "sketch";  // ScheduleSpace sampling
  bool allow_foreign = false;       // resume from and transfer with other machines' records
  int threads = 0;                  // Halide threads for measurements and the end-to-end runs (0 = all cores)
  std::vector<int> confirm_threads; // winners re-measured at these thread counts too (empty: 1)
  std::string scheduler = "sequential";  // which task gets the next slot (task_scheduler.h)
  double slot = 0;                  // a slot's seconds (0 = budget / (10 x tasks), at least 2)
  std::vector<std::string> reuse_from;  // donor records databases: tuning reuse instead of search
  std::string donor = "auto";       // reuse: a donor model, auto or all
  int full_evals = 10;              // reuse: full-model evaluations after the standalone phase
  bool same_class_only = false;     // reuse: no rule variants of other classes with the same anchor
  int network_evals = 6;            // per thread count, network variants timed in the whole model
  std::string runner = "local";     // local, or mpi: the other ranks of an mpirun build and run the candidates
};

std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }

std::string duration(double s) {
  const int t = static_cast<int>(s + 0.5);
  return t >= 60 ? fmt::format("{}m{:02}s", t / 60, t % 60) : fmt::format("{}s", t);
}

// Ctrl-C asks the tuner to stop after the current batch (whose interrupted workers record
// nothing); a second Ctrl-C ends the process at once.
std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) { g_stop.store(true); }

void install_sigint_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND;  // the second one gets the default action
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

int terminal_columns() {
  winsize w{};
  return ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20 ? w.ws_col : 100;
}

// Standalone measurements as the arguments ask (shared by search and reuse).
MeasureOptions measure_options(const TuneArgs& a) {
  MeasureOptions m;
  m.repeats = a.repeats;
  m.cold_weights = !a.warm_weights;
  m.compile_jobs = a.jobs;
  m.threads = a.threads;
  m.cache_root = a.cache_dir;
  return m;
}

// The in-network trials (tune/network_refine.h): the workload's steps per inference in the model
// as it runs now and with the variant, timed alternately.
void print_network_trials(const std::vector<NetworkTrial>& trials) {
  if (trials.empty()) return;
  std::cout << fmt::format("{:<16} {:<24} {:>7} {:<16} {:>11} {:>11} {:>13}  {}\n", "in the network", "name", "threads",
                           "variant", "steps ms", "variant ms", "model ms", "");
  for (const auto& t : trials)
    std::cout << fmt::format("{:<16} {:<24} {:>7} {:<16} {:>11} {:>11} {:>13}  {}\n", t.key_hash, t.name.substr(0, 24),
                             t.threads, t.variant, t.error.empty() ? ms(t.base_s) : "-",
                             t.error.empty() ? ms(t.variant_s) : "-",
                             t.error.empty() ? ms(t.base_model_s) + "/" + ms(t.variant_model_s) : "-",
                             !t.error.empty() ? "not timed: " + t.error
                             : t.kept         ? "kept: run uses it"
                                              : "discarded");
}

// `tune --reuse-from`: the donors' schedules re-fitted, measured alone, then in the whole model
// (tune/reuse.h).
int reuse_command(const TuneArgs& a) {
  if (a.e2e_iters < 1) throw Error("tune --reuse-from: --e2e-iters must be at least 1 (the full phase times the model)");
  Graph g = load_model(a.model, a.threads);
  RecordsDB db(a.db_path);
  ReuseOptions o;
  o.donor_dbs = a.reuse_from;
  o.donor = a.donor;
  o.full_evals = a.full_evals;
  o.across_classes = !a.same_class_only;
  o.e2e_iters = a.e2e_iters;
  o.e2e_threads = a.threads;
  o.measure = measure_options(a);
  o.stop = &g_stop;
  install_sigint_handler();
  auto progress = [&](const std::string& phase, const std::string& line) {
    if (!a.json) spdlog::info("reuse {}: {}", phase, line);
  };
  ReuseSummary s = reuse_tune(g, db, o, progress);
  signal(SIGINT, SIG_DFL);
  nlohmann::json j = reuse_json(s);
  j["db"] = a.db_path;
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return s.stopped ? 130 : 0;
  }
  std::cout << donor_table(s);
  std::cout << fmt::format("{:<16} {:<24} {:>5} {:>5} {:>11} {:>11} {:>8} {:>8}  {}\n", "workload", "name", "class",
                           "count", "default ms", "reuse ms", "carried", "refused", "in the model");
  for (const auto& w : s.workloads)
    std::cout << fmt::format("{:<16} {:<24} {:>5} {:>5} {:>11} {:>11} {:>8} {:>8}  {}\n", w.key_hash,
                             w.name.substr(0, 24), w.class_label, w.count, ms(w.default_s),
                             w.best_standalone_s > 0 ? ms(w.best_standalone_s) : "-", w.measured, w.refused,
                             !w.error.empty()   ? "not reused: " + w.error
                             : w.chosen.empty() ? "default"
                             : w.confirmed      ? w.chosen
                             : s.stopped        ? w.chosen + " (stopped before its confirmation)"
                                                : w.chosen + " (not confirmed: runs the default)");
  if (!s.evaluations.empty()) {
    const auto& last = s.evaluations.back();
    std::cout << fmt::format("{}: standalone phase {}, {} full evaluations; model {} ms -> {} ms ({:.3f}x, timed "
                             "alternately in the last evaluation) in {}\n",
                             g.path, duration(s.standalone_seconds), s.evaluations.size() - 1, ms(last.default_s),
                             ms(last.best_s), last.default_s / last.best_s, duration(s.seconds));
  }
  if (s.e2e_reused_s > 0)
    std::cout << fmt::format("end to end, as run --db runs it ({} runs each, alternately): {} ms -> {} ms ({:.3f}x)\n",
                             a.e2e_iters, ms(s.e2e_default_s), ms(s.e2e_reused_s), s.e2e_default_s / s.e2e_reused_s);
  return s.stopped ? 130 : 0;
}

int search_command(const TuneArgs& a, MpiFleet* fleet);

int tune_command(const TuneArgs& a) {
  if (a.runner == "local") return a.reuse_from.empty() ? search_command(a, nullptr) : reuse_command(a);
  if (!a.reuse_from.empty()) throw Error("tune: --runner mpi measures a search, not --reuse-from");
  if (!MpiWorld::launched_by_mpirun())
    throw Error("tune --runner mpi: start it with mpirun (e.g. mpirun -np 3 --enable-recovery tensorsched tune ...)");
  MpiWorld world;
  const std::string identity = machine_fingerprint().dump();
  // The other ranks build and run; only rank 0 opens the model and the database.
  if (world.rank() != 0) return world.finish(serve_measurements(world, identity, measure_options(a)));
  int code = 0;
  {
    MpiFleet fleet(world, identity);  // its end stops the runners
    code = search_command(a, &fleet);
  }
  return world.finish(code);
}

// A search (with `fleet`: its candidates measured on the runner ranks).
int search_command(const TuneArgs& a, MpiFleet* fleet) {
  if ((a.trials > 0) == (a.seconds > 0)) throw Error("tune: give exactly one budget, --trials N or --time SECONDS");
  Graph g = load_model(a.model, a.threads);
  RecordsDB db(a.db_path);
  db.set_allow_foreign(a.allow_foreign);
  if (!a.allow_foreign && db.foreign_count() > 0 && !a.json)
    spdlog::warn("{}: {} records were measured on another machine or by another build; they are neither resumed nor "
                 "used for transfer (--allow-foreign-records)",
                 a.db_path, db.foreign_count());
  GbtSaOptions gbt = a.gbt;
  if (a.transfer) {
    if (a.policy != "gbt-sa") throw Error(fmt::format("tune: --transfer needs --policy gbt-sa (not '{}')", a.policy));
    gbt.transfer_samples = [&db](const std::string& exclude) { return transfer_samples(db, exclude); };
  }
  auto policy = make_policy(a.policy, gbt);
  TuneOptions o;
  o.trials = a.trials;
  o.seconds = a.seconds;
  o.seed = a.seed;
  o.measure = measure_options(a);
  o.e2e_threads = a.threads;
  o.e2e_iters = a.e2e_iters;
  o.confirm_threads = a.confirm_threads;
  o.network_evals = a.network_evals;
  o.scheduler = a.scheduler;
  o.slot_seconds = a.slot;
  o.only.insert(a.workloads.begin(), a.workloads.end());
  o.sampling = a.sampling == "uniform" ? Sampling::Uniform : a.sampling == "stratified" ? Sampling::Stratified : Sampling::Sketch;
  if (fleet)
    o.make_measurer = [fleet](const Workload& w, const MeasureOptions& m) {
      return std::make_unique<Measurer>(w, m, std::make_unique<MpiBuilder>(*fleet), std::make_unique<MpiRunner>(*fleet));
    };
  // Progress on stderr: one updating line fitted to a terminal, else a plain line per task and
  // at most every 30 s (logs of a run in the background).
  const bool tty = isatty(STDERR_FILENO);
  auto last_line = std::chrono::steady_clock::now() - std::chrono::hours(1);
  size_t last_task = 0;
  auto progress = [&](const TuneProgress& p) {
    if (a.json) return;
    std::string trials = p.target > 0 ? fmt::format("{}/{}", p.trials, p.target) : std::to_string(p.trials);
    std::string line = fmt::format("[{}/{}] {} trials {} best {} ms (default {} ms) ETA {}", p.task, p.tasks,
                                   p.task_name, trials, ms(p.best_s), ms(p.default_s), duration(p.eta_s));
    if (fleet) line += ", " + fleet->status();
    if (tty) {
      const size_t width = static_cast<size_t>(terminal_columns() - 1);
      if (line.size() > width) line = line.substr(0, width);
      std::cerr << "\r\033[K" << line << std::flush;
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (p.task == last_task && now - last_line < std::chrono::seconds(30)) return;
    last_task = p.task;
    last_line = now;
    spdlog::info("tune {}", line);
  };
  o.stop = &g_stop;
  install_sigint_handler();
  TuneSummary s = tune_model(g, db, *policy, o, progress);
  signal(SIGINT, SIG_DFL);
  if (tty && !a.json) std::cerr << "\r\033[K" << std::flush;
  if (s.stopped)
    spdlog::warn("tune stopped by Ctrl-C after {} measurements; every finished one is in {}; run the same command "
                 "again to resume (nothing recorded is measured again)",
                 s.measured_now, a.db_path);

  nlohmann::json j = summary_json(s);
  j["model"] = g.path;
  j["db"] = a.db_path;
  const double ratio = j["speedup"];
  const int exit_code = s.stopped ? 130 : 0;  // 128 + SIGINT, as a shell reports it
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return exit_code;
  }
  std::cout << fmt::format("{:<16} {:<24} {:>5} {:>11} {:>11} {:>7} {:>6} {:>7}  {}\n", "workload", "name", "count",
                           "default ms", "best ms", "speedup", "noise", "trials", "errors");
  for (const auto& t : s.tasks) {
    std::string errs;
    for (const auto& [k, n] : t.errors) errs += fmt::format("{}{} {}", errs.empty() ? "" : ", ", n, k);
    if (t.error == "not selected" || t.error == "stopped") continue;
    if (!t.error.empty()) errs = "not tuned: " + t.error;
    // A winner not re-measured is marked; a spread over 10% (interquartile range / median) is flagged.
    const double noise = std::max(t.default_noise, t.best_noise);
    if (!t.confirmed && t.best_s > 0 && t.best_s < t.default_s) errs = "unconfirmed" + (errs.empty() ? "" : ", " + errs);
    if (noise > 0.1) errs = "noisy" + (errs.empty() ? "" : ", " + errs);
    if (t.exhausted) errs = fmt::format("space exhausted after {} trials", t.trials) + (errs.empty() ? "" : ", " + errs);
    std::cout << fmt::format("{:<16} {:<24} {:>5} {:>11} {:>11} {:>7.2f} {:>5.0f}% {:>7}  {}\n", t.key_hash,
                             t.name.substr(0, 24), t.count, ms(t.default_s), ms(t.best_s),
                             t.best_s > 0 ? t.default_s / t.best_s : 0.0, noise * 100, t.trials, errs);
  }
  std::cout << fmt::format("{}: policy {}, scheduler {}, measured {} schedules in {}; {} of {} workloads beat the "
                           "default (re-measured against it, interleaved)\n", g.path, s.policy, s.scheduler,
                           s.measured_now, duration(s.seconds), s.tuned_workloads, s.tasks.size());
  print_network_trials(s.network);
  if (s.curve.size() > 1)
    std::cout << fmt::format("estimated model latency (sum of count x best): {} ms -> {} ms over {} slots; the "
                             "scheduler took {:.2f} s ({:.1f}%)\n",
                             ms(s.curve.front().latency_s), ms(s.curve.back().latency_s), s.curve.size() - 1,
                             s.scheduler_seconds, 100.0 * s.scheduler_seconds / std::max(s.seconds, 1e-9));
  if (s.e2e_tuned_s > 0)
    std::cout << fmt::format("end to end (median of {} runs, same process): default {} ms, tuned {} ms, speedup {:.3f}x\n",
                             s.e2e_iters, ms(s.e2e_default_s), ms(s.e2e_tuned_s), ratio);
  return exit_code;
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* sub = app.add_subcommand("tune", "Tune every workload of a model, recording measurements in a database");
  add_model_args(sub, a->model);
  sub->add_option("--db", a->db_path, "Records database (SQLite; created if missing)")->required();
  sub->add_option("--trials", a->trials, "Measured schedules per workload (the scheduler may move them between workloads)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--time", a->seconds, "Total tuning time in seconds, shared by the workloads")->check(CLI::PositiveNumber);
  std::string names;
  for (const auto& n : policy_names()) names += (names.empty() ? "" : "|") + n;
  sub->add_option("--policy", a->policy, "Search policy: " + names)->check(CLI::IsMember(policy_names()));
  sub->add_option("--scheduler", a->scheduler,
                  "Which task gets the next slot: sequential (each its whole share in turn), round-robin, linear "
                  "(by FLOPs), gradient (Ansor) or dynatune (UCB over a Bayesian model of each task's curve)")
      ->check(CLI::IsMember(scheduler_names()));
  sub->add_option("--slot", a->slot, "Seconds of a slot (not sequential; 0 = time budget / (10 x tasks), at least 2)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--seed", a->seed, "Seed of the search");
  sub->add_option("--repeats", a->repeats, "Timed runs per measurement")->check(CLI::PositiveNumber);
  sub->add_flag("--warm-weights", a->warm_weights,
                "Leave a workload's weights in the caches between measured runs (default: evicted before each, as "
                "they arrive from memory in a network)");
  sub->add_option("--jobs", a->jobs, "Parallel compiles (0 = hardware threads)");
  sub->add_option("--threads", a->threads, "Threads the measured code runs with (0 = all cores)")->check(CLI::NonNegativeNumber);
  sub->add_option("--confirm-threads", a->confirm_threads,
                  "Thread counts each winner is also re-measured against the default at, for `run --threads N` "
                  "(default: 1)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sub->add_option("--network-evals", a->network_evals,
                  "After the winners' confirmation, per thread count: the heaviest workloads whose default has a "
                  "variant a standalone measurement cannot judge (prefetch=2: page walks ahead) timed with it in the "
                  "whole model, kept where their steps got faster (0 = none)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  sub->add_option("--e2e-iters", a->e2e_iters, "End-to-end runs of each model version in the summary (0 = skip)");
  sub->add_option("--cache-dir", a->cache_dir, "Code cache root");
  sub->add_option("--runner", a->runner,
                  "Where candidates are built and run: local, or mpi (under mpirun: rank 0 searches, the other "
                  "ranks measure, each on its host)")
      ->check(CLI::IsMember({"local", "mpi"}));
  sub->add_flag("--allow-foreign-records", a->allow_foreign,
                "Resume from and transfer with records of other machines and builds too");
  sub->add_flag("--json", a->json, "Print the summary as JSON");
  sub->add_option("--workloads", a->workloads, "Tune only these workloads (key hashes, see `tensorsched workloads`)")
      ->delimiter(',');
  sub->add_option("--sampling", a->sampling,
                  "How schedules are drawn from the space: sketch (random knobs of a register-blocked "
                  "sketch where the workload has one, else stratified), stratified (each placement kind, "
                  "vector choice, parallel group size and unroll class equally likely) or uniform over "
                  "candidates")
      ->capture_default_str()->check(CLI::IsMember({"sketch", "stratified", "uniform"}));
  auto* g = &a->gbt;
  sub->add_flag("--transfer", a->transfer, "gbt-sa: add a global model trained on the database's other workloads");
  sub->add_option("--cost-model", g->model, "gbt-sa: cost model")->capture_default_str()->check(CLI::IsMember(cost_model_names()));
  sub->add_option("--plan-size", g->plan_size, "gbt-sa: b, schedules per plan (model retrained at least every b)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  sub->add_option("--epsilon", g->epsilon, "gbt-sa: fraction of a plan drawn at random")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  sub->add_option("--lambda", g->lambda, "gbt-sa: diverse plan picked among the top lambda*b")->capture_default_str()->check(CLI::Range(1.0, 1e6));
  sub->add_option("--alpha", g->alpha, "gbt-sa: weight of a newly covered schedule component")->capture_default_str();
  sub->add_option("--sa-chains", g->chains, "gbt-sa: parallel simulated-annealing chains")->capture_default_str()->check(CLI::PositiveNumber);
  sub->add_option("--sa-steps", g->steps, "gbt-sa: most annealing steps per plan")->capture_default_str()->check(CLI::NonNegativeNumber);
  sub->add_option("--reuse-from", a->reuse_from,
                  "Tuning reuse: start from the schedules of earlier models in these records databases (re-fitted to "
                  "this model's workloads, measured alone, then in the whole model) instead of searching")
      ->delimiter(',');
  sub->add_option("--donor", a->donor, "Reuse: the donor model (a name in those databases), auto (the heuristic's "
                                       "best) or all")
      ->capture_default_str();
  sub->add_option("--full-evals", a->full_evals, "Reuse: full-model evaluations after the standalone phase")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  sub->add_flag("--same-class-only", a->same_class_only,
                "Reuse: carry only schedules of each workload's own class (default: also the default rule's "
                "variants (their knobs) of donor workloads of other classes over the same anchor op (a conv, matmul, pooling, ...), e.g. Conv+Relu's for "
                "Conv+Add+Relu)");
  on_command(sub, [a, sub] {
    // Reuse measures the donors' schedules: the search's options would be silently ignored.
    static const std::set<std::string> search_only = {
        "--trials", "--time",      "--policy",  "--scheduler", "--slot",   "--seed",      "--workloads",
        "--sampling", "--transfer", "--allow-foreign-records", "--cost-model", "--plan-size", "--epsilon",
        "--lambda",  "--alpha",     "--sa-chains", "--sa-steps", "--network-evals"};
    for (const CLI::Option* o : sub->get_options()) {
      if (o->count() == 0) continue;
      const std::string name = o->get_name();
      if (!a->reuse_from.empty() && search_only.count(name))
        throw Error(fmt::format("tune --reuse-from: {} does not apply (reuse measures the donors' schedules; its "
                                "budget is --full-evals)",
                                name));
      if (a->reuse_from.empty() && (name == "--donor" || name == "--full-evals" || name == "--same-class-only"))
        throw Error(fmt::format("tune: {} applies only with --reuse-from", name));
    }
    return tune_command(*a);
  });
}

}  // namespace ts
