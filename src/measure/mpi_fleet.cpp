#include "measure/mpi_fleet.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "graph/error.h"
#include "graph/workload_onnx.h"
#include "measure/mpi_protocol.h"
#include "measure/workload_code.h"

namespace ts {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr double kHelloS = 120;  // a runner that has not said hello by then is not waited for
constexpr double kReplySlackS = 60;  // a request's deadline past its own timeouts

}  // namespace

MpiFleet::MpiFleet(const MpiWorld& world, std::string identity) : world_(world), identity_(std::move(identity)) {
  if (world_.rank() != 0) throw Error(fmt::format("rank {}: only rank 0 leads the runners", world_.rank()));
  std::set<int> waiting;
  for (int r = 1; r < world_.size(); r++) waiting.insert(r);
  const auto t0 = Clock::now();
  while (!waiting.empty() && seconds_since(t0) < kHelloS) {
    std::optional<MpiWorld::Message> m = world_.try_receive(kMpiHelloTag);
    if (!m) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    waiting.erase(m->from);
    const Unpacked hello = unpack_message(m->bytes, fmt::format("hello of rank {}", m->from));
    const std::string host = hello.head.value("host", "?");
    const std::string why = identity_mismatch(identity_, hello.head.value("identity", ""));
    const bool ok = why.empty();
    world_.send_within(m->from, kMpiHelloTag, pack_message({{"accepted", ok}, {"why", why}}), kRunnerSilenceS);
    if (!ok) {
      spdlog::error("runner rank {} ({}) refused: its machine is not this one: {}", m->from, host, why);
      continue;
    }
    hosts_[m->from] = host;
    live_.push_back(m->from);
  }
  for (int r : waiting) spdlog::error("runner rank {} did not say hello within {:.0f} s: not used", r, kHelloS);
  std::sort(live_.begin(), live_.end());
  accepted_ = static_cast<int>(live_.size());
  if (live_.empty())
    throw Error(fmt::format("mpi runner: none of the {} other ranks can measure for rank 0 ({})", world_.size() - 1,
                            world_.size() > 1 ? "see the messages above" : "start with mpirun -np 2 or more"));
  spdlog::info("mpi runner: {} on {} ranks", status(), world_.size());
}

MpiFleet::~MpiFleet() {
  for (int r : live_) world_.send_within(r, kMpiRequestTag, pack_message({{"seq", ++seq_}, {"op", "stop"}}), 5);
}

std::string MpiFleet::status() const { return fmt::format("{}/{} runners live", live_.size(), accepted_); }

void MpiFleet::lose(int rank, const std::string& why) {
  auto it = std::find(live_.begin(), live_.end(), rank);
  if (it == live_.end()) return;
  live_.erase(it);
  spdlog::warn("runner rank {} ({}) lost: {}; {}", rank, hosts_[rank], why, status());
}

void MpiFleet::exchange(std::vector<Exchange>& ex, double seconds) {
  struct Waiting {
    size_t index;
    int64_t seq;
    Clock::time_point heard;
  };
  std::vector<Waiting> waiting;
  const auto t0 = Clock::now();
  for (size_t i = 0; i < ex.size(); i++) {
    Exchange& e = ex[i];
    if (std::find(live_.begin(), live_.end(), e.rank) == live_.end()) {
      e.lost = fmt::format("runner rank {} was lost earlier", e.rank);
      continue;
    }
    if (!world_.send_within(e.rank, kMpiRequestTag, e.request, kRunnerSilenceS)) {
      e.lost = fmt::format("runner rank {} ({}) did not take a request in {:.0f} s", e.rank, hosts_[e.rank], kRunnerSilenceS);
      lose(e.rank, e.lost);
      continue;
    }
    const int64_t seq = nlohmann::json::parse(e.request.substr(0, e.request.find('\n'))).at("seq");
    waiting.push_back({i, seq, Clock::now()});
  }
  while (!waiting.empty()) {
    bool got = false;
    while (std::optional<MpiWorld::Message> m = world_.try_receive(kMpiHeartbeatTag)) {
      got = true;
      for (Waiting& w : waiting)
        if (ex[w.index].rank == m->from) w.heard = Clock::now();
    }
    while (std::optional<MpiWorld::Message> m = world_.try_receive(kMpiReplyTag)) {
      got = true;
      const nlohmann::json head = nlohmann::json::parse(m->bytes.substr(0, m->bytes.find('\n')), nullptr, false);
      const int64_t seq = head.is_object() ? head.value("seq", int64_t{-1}) : -1;
      auto it = std::find_if(waiting.begin(), waiting.end(),
                             [&](const Waiting& w) { return ex[w.index].rank == m->from && w.seq == seq; });
      if (it == waiting.end()) continue;  // a late reply to a request given up on
      ex[it->index].reply = std::move(m->bytes);
      waiting.erase(it);
    }
    for (size_t k = waiting.size(); k-- > 0;) {
      Exchange& e = ex[waiting[k].index];
      std::string why;
      if (seconds_since(waiting[k].heard) > kRunnerSilenceS)
        why = fmt::format("runner rank {} ({}) was silent for {:.0f} s", e.rank, hosts_[e.rank], kRunnerSilenceS);
      else if (seconds > 0 && seconds_since(t0) > seconds)
        why = fmt::format("runner rank {} ({}) did not answer within {:.0f} s", e.rank, hosts_[e.rank], seconds);
      if (why.empty()) continue;
      e.lost = why;
      lose(e.rank, why);
      waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

nlohmann::json MpiFleet::workload_head(int rank, const Workload& w, std::vector<std::string>& blobs) {
  nlohmann::json head = {{"workload", w.exact_key}};
  if (known_[rank].insert(w.exact_key).second) {
    head["subgraph_blob"] = blobs.size();
    blobs.push_back(workload_subgraph(w));
  }
  return head;
}

std::vector<CompileOutcome> MpiFleet::build(const std::vector<CompileJob>& jobs, double timeout_s) {
  std::vector<CompileOutcome> out(jobs.size());
  if (live_.empty()) {
    for (CompileOutcome& o : out) o = {"no runner is live (every rank was lost)", "runner_lost", 0};
    return out;
  }
  std::map<int, std::vector<size_t>> share;  // rank -> its jobs
  for (size_t i = 0; i < jobs.size(); i++) {
    if (jobs[i].schedule_json.empty())
      throw Error(fmt::format("mpi builder: job {} ({}) has no schedule as data to send", i, jobs[i].hash));
    share[live_[next_++ % live_.size()]].push_back(i);
  }
  std::vector<Exchange> ex;
  std::vector<const std::vector<size_t>*> ex_jobs;
  for (const auto& [rank, mine] : share) {
    std::vector<std::string> blobs;
    nlohmann::json list = nlohmann::json::array();
    for (size_t i : mine) {
      nlohmann::json job = workload_head(rank, *jobs[i].workload, blobs);
      job["hash"] = jobs[i].hash;
      job["schedule"] = jobs[i].schedule_json;
      list.push_back(std::move(job));
    }
    ex.push_back({rank, pack_message({{"seq", ++seq_}, {"op", "build"}, {"timeout_s", timeout_s}, {"jobs", list}}, blobs)});
    ex_jobs.push_back(&mine);
  }
  const double longest = timeout_s > 0 ? timeout_s * static_cast<double>(jobs.size()) + kReplySlackS : 0;
  exchange(ex, longest);
  for (size_t k = 0; k < ex.size(); k++) {
    const std::vector<size_t>& mine = *ex_jobs[k];
    nlohmann::json outcomes;
    if (ex[k].reply) outcomes = unpack_message(*ex[k].reply, fmt::format("build reply of rank {}", ex[k].rank)).head.at("outcomes");
    for (size_t j = 0; j < mine.size(); j++) {
      CompileOutcome& o = out[mine[j]];
      if (!ex[k].reply || j >= outcomes.size()) {
        o = {ex[k].reply ? fmt::format("runner rank {} answered {} of {} jobs", ex[k].rank, outcomes.size(), mine.size())
                         : ex[k].lost,
             "runner_lost", 0};
        continue;
      }
      o.error = outcomes[j].at("error");
      o.seconds = outcomes[j].at("seconds");
      const CompileJob& job = jobs[mine[j]];
      if (o.error.empty()) placed_[{job.workload->exact_key, job.hash}] = {ex[k].rank, job.schedule_json, timeout_s};
    }
  }
  return out;
}

bool MpiFleet::has(const Workload& w, const std::string& schedule_hash) const {
  auto it = placed_.find({w.exact_key, schedule_hash});
  return it != placed_.end() && std::find(live_.begin(), live_.end(), it->second.rank) != live_.end();
}

void MpiFleet::discard(const Workload& w, const std::string& schedule_hash) {
  auto it = placed_.find({w.exact_key, schedule_hash});
  if (it == placed_.end()) return;
  if (std::find(live_.begin(), live_.end(), it->second.rank) != live_.end())
    world_.post(it->second.rank, kMpiRequestTag,
                pack_message({{"seq", ++seq_}, {"op", "discard"}, {"workload", w.exact_key}, {"hash", schedule_hash}}));
  placed_.erase(it);
}

MeasureResult MpiFleet::run(const RunRequest& request, const MeasureOptions& opts, std::vector<Tensor>* outputs) {
  const Workload& w = *request.workload;
  const std::string what = fmt::format("workload {} ({})", w.key_hash(), w.name);
  MeasureResult m;
  m.schedule_hash = request.schedule_hash;
  m.threads = effective_threads(opts.threads);
  auto it = placed_.find({w.exact_key, request.schedule_hash});
  if (it == placed_.end()) {
    m.error_kind = "runtime_error";
    m.error_message = fmt::format("{}: no runner holds the code of schedule {}", what, request.schedule_hash);
    return m;
  }
  if (!has(w, request.schedule_hash)) {  // its runner is lost: build it again on a live one
    const Placed was = it->second;
    CompileJob job{&w, {}, request.schedule_hash, request.layouts, was.schedule_json};
    const CompileOutcome o = build({job}, was.timeout_s)[0];
    if (!o.error.empty()) {
      m.error_kind = o.error_kind.empty() ? "compile_error" : o.error_kind;
      m.error_message = fmt::format("{}: building it again after runner rank {} was lost: {}", what, was.rank, o.error);
      return m;
    }
    it = placed_.find({w.exact_key, request.schedule_hash});
  }
  const int rank = it->second.rank;
  std::vector<std::string> blobs;
  nlohmann::json head = workload_head(rank, w, blobs);
  head["seq"] = ++seq_;
  head["op"] = "run";
  head["hash"] = request.schedule_hash;
  head["options"] = run_options_json(opts);
  head["check"] = request.reference != nullptr;
  head["fault"] = static_cast<int>(request.fault);
  if (request.reference && checked_[rank].insert(w.exact_key).second) {
    head["reference_blob"] = blobs.size();
    blobs.push_back(concat_tensor_bytes(*request.reference));
  }
  std::vector<Exchange> ex = {{rank, pack_message(std::move(head), blobs)}};
  exchange(ex, opts.run_timeout_s > 0 ? opts.run_timeout_s + kReplySlackS : 0);
  if (!ex[0].reply) {
    m.error_kind = "runner_lost";
    m.error_message = fmt::format("{}: {}", what, ex[0].lost);
    return m;
  }
  const Unpacked reply = unpack_message(*ex[0].reply, fmt::format("run reply of rank {}", rank));
  m = measure_result_from_json(reply.head.at("result"));
  if (outputs && !request.reference && m.valid()) {
    std::string why;
    std::optional<std::vector<Tensor>> got =
        reply.blobs.empty() ? std::nullopt : outputs_from_bytes(w, reply.blobs[0], why);
    if (!got) {
      m.error_kind = "runtime_error";
      m.error_message = fmt::format("{}: runner rank {} sent no outputs{}", what, rank, why.empty() ? "" : ": " + why);
      m.times.clear();
      summarize_times(m);
      return m;
    }
    *outputs = std::move(*got);
  }
  return m;
}

}  // namespace ts
