#include "measure/mpi_measure_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>

#include "graph/error.h"
#include "graph/workload_onnx.h"
#include "measure/local_builder.h"
#include "measure/local_runner.h"
#include "measure/mpi_protocol.h"
#include "measure/worker_pool.h"
#include "measure/workload_code.h"
#include "schedule/schedule_fn.h"

namespace ts {

namespace {

using Clock = std::chrono::steady_clock;

// What this runner holds of one workload.
struct HeldWorkload {
  Workload w;                                 // rebuilt from its subgraph
  std::map<std::string, Tensor> inputs;       // random_inputs(w.graph, inputs_seed), drawn at the first run
  uint64_t inputs_seed = 0;
  bool has_inputs = false;
  std::vector<Tensor> reference;              // the default's outputs, as rank 0 sent them
  std::map<std::string, std::vector<InputLayout>> built;  // schedule hash -> its input layouts
};

class Server {
 public:
  Server(const MpiWorld& world, const MeasureOptions& local)
      : world_(world),
        cache_(CodeCache::open_default(host_code_target(), local.cache_root)),
        builder_(cache_, local.compile_jobs),
        runner_(cache_) {}

  // Handles one request; false on stop.
  bool handle(const std::string& bytes) {
    const Unpacked u = unpack_message(bytes, fmt::format("rank {}: request", world_.rank()));
    const std::string op = u.head.value("op", "");
    const int64_t seq = u.head.value("seq", int64_t{0});
    if (op == "stop") return false;
    heartbeat();
    if (op == "discard") {
      auto it = held_.find(u.head.at("workload"));
      if (it != held_.end()) {
        builder_.discard(it->second.w, u.head.at("hash"));
        it->second.built.erase(u.head.at("hash").get<std::string>());
      }
      return true;
    }
    nlohmann::json reply = {{"seq", seq}};
    std::vector<std::string> blobs;
    // A request this runner cannot serve is answered with the reason, never left unanswered.
    const auto failed = [&](const std::string& why) {
      if (op == "build") {
        reply["outcomes"] = nlohmann::json::array();
        for (size_t i = 0; i < u.head.at("jobs").size(); i++) reply["outcomes"].push_back({{"error", why}, {"seconds", 0}});
      } else {
        MeasureResult m;
        m.schedule_hash = u.head.value("hash", "");
        m.error_kind = "runtime_error";
        m.error_message = why;
        reply["result"] = measure_result_json(m);
      }
    };
    if (op != "build" && op != "run") throw Error(fmt::format("rank {}: unknown request '{}'", world_.rank(), op));
    try {
      if (op == "build") reply["outcomes"] = build(u);
      else reply["result"] = run(u, blobs);
    } catch (const std::exception& e) {
      blobs.clear();
      failed(fmt::format("rank {}: {}", world_.rank(), e.what()));
    }
    world_.send(0, kMpiReplyTag, pack_message(std::move(reply), blobs));
    return true;
  }

  // A heartbeat when the last is a second old (also called from worker waits).
  void heartbeat() {
    if (Clock::now() - last_beat_ < std::chrono::seconds(1)) return;
    last_beat_ = Clock::now();
    world_.post(0, kMpiHeartbeatTag, "");
  }

 private:
  // The workload a request names, rebuilt from the subgraph blob the first time.
  HeldWorkload& workload(const nlohmann::json& head, const std::vector<std::string>& blobs) {
    const std::string key = head.at("workload");
    auto it = held_.find(key);
    if (it != held_.end()) return it->second;
    if (!head.contains("subgraph_blob"))
      throw Error(fmt::format("rank {}: a request names a workload this runner was never sent", world_.rank()));
    const std::string where = fmt::format("rank {}: workload from rank 0", world_.rank());
    Workload w = workload_from_subgraph(blobs.at(head.at("subgraph_blob").get<size_t>()), where);
    if (w.exact_key != key) throw Error(fmt::format("{}: its subgraph rebuilds another workload ({})", where, w.key_hash()));
    return held_.emplace(key, HeldWorkload{std::move(w), {}, 0, false, {}, {}}).first->second;
  }

  nlohmann::json build(const Unpacked& u) {
    const nlohmann::json& list = u.head.at("jobs");
    nlohmann::json outcomes = nlohmann::json::array();
    std::vector<CompileJob> jobs;
    std::vector<HeldWorkload*> of;
    std::vector<Schedule> schedules;
    std::vector<std::string> refused(list.size());  // why a job is not compiled ("" = it is)
    schedules.reserve(list.size());
    for (size_t i = 0; i < list.size(); i++) {
      try {
        HeldWorkload& h = workload(list[i], u.blobs);
        Schedule s = Schedule::from_json(list[i].at("schedule").get<std::string>());
        if (s.hash() != list[i].at("hash"))
          throw Error(fmt::format("schedule {} reads back as {} here", list[i].at("hash").get<std::string>(), s.hash()));
        schedules.push_back(std::move(s));
        of.push_back(&h);
      } catch (const std::exception& e) {
        refused[i] = fmt::format("rank {}: {}", world_.rank(), e.what());
        schedules.emplace_back();
        of.push_back(nullptr);
      }
    }
    std::vector<size_t> index;  // jobs -> list position
    for (size_t i = 0; i < list.size(); i++)
      if (refused[i].empty()) {
        jobs.push_back({&of[i]->w, schedule_fn(schedules[i]), schedules[i].hash(), schedules[i].layouts, ""});
        index.push_back(i);
      }
    std::vector<CompileOutcome> done = builder_.build(jobs, u.head.at("timeout_s").get<double>());
    std::vector<CompileOutcome> all(list.size());
    for (size_t i = 0; i < list.size(); i++) all[i].error = refused[i];
    for (size_t k = 0; k < index.size(); k++) {
      all[index[k]] = done[k];
      if (done[k].error.empty()) of[index[k]]->built[jobs[k].hash] = jobs[k].layouts;
    }
    for (const CompileOutcome& o : all) outcomes.push_back({{"error", o.error}, {"seconds", o.seconds}});
    return outcomes;
  }

  nlohmann::json run(const Unpacked& u, std::vector<std::string>& blobs) {
    HeldWorkload& h = workload(u.head, u.blobs);
    const MeasureOptions opts = run_options_from_json(u.head.at("options"));
    const std::string hash = u.head.at("hash");
    const std::string what = fmt::format("workload {} ({})", h.w.key_hash(), h.w.name);
    if (u.head.contains("reference_blob")) {
      std::string why;
      auto ref = outputs_from_bytes(h.w, u.blobs.at(u.head.at("reference_blob").get<size_t>()), why);
      if (!ref) throw Error(fmt::format("rank {}: {}: reference outputs: {}", world_.rank(), what, why));
      h.reference = std::move(*ref);
    }
    MeasureResult m;
    m.schedule_hash = hash;
    auto built = h.built.find(hash);
    const bool check = u.head.at("check");
    if (built == h.built.end()) {
      m.error_kind = "runtime_error";
      m.error_message = fmt::format("rank {}: {}: schedule {} was not built here", world_.rank(), what, hash);
    } else if (check && h.reference.empty()) {
      m.error_kind = "runtime_error";
      m.error_message = fmt::format("rank {}: {}: no reference outputs to check against", world_.rank(), what);
    } else {
      if (!h.has_inputs || h.inputs_seed != opts.input_seed) {
        h.inputs = random_inputs(h.w.graph, opts.input_seed);
        h.inputs_seed = opts.input_seed;
        h.has_inputs = true;
      }
      RunRequest request{&h.w, hash, built->second, &h.inputs, check ? &h.reference : nullptr,
                         static_cast<InjectedFault>(u.head.at("fault").get<int>())};
      std::vector<Tensor> outputs;
      m = runner_.run(request, opts, check ? nullptr : &outputs);
      if (!check && m.valid()) blobs.push_back(concat_tensor_bytes(outputs));
    }
    return measure_result_json(m);
  }

  const MpiWorld& world_;
  CodeCache cache_;
  LocalBuilder builder_;
  LocalRunner runner_;
  std::map<std::string, HeldWorkload> held_;  // by exact key
  Clock::time_point last_beat_ = Clock::now();
};

}  // namespace

int serve_measurements(const MpiWorld& world, const std::string& identity, const MeasureOptions& local) {
  world.send(0, kMpiHelloTag, pack_message({{"host", world.host()}, {"identity", identity}}));
  const Unpacked answer = unpack_message(world.receive(0, kMpiHelloTag), fmt::format("rank {}: hello", world.rank()));
  if (!answer.head.value("accepted", false)) {
    spdlog::error("rank {} ({}): rank 0 does not measure on this host: {}", world.rank(), world.host(),
                  answer.head.value("why", "?"));
    return 1;
  }
  Server server(world, local);
  WorkerWaitHook before = set_worker_wait_hook([&server] { server.heartbeat(); });
  int measured = 0;
  try {
    while (server.handle(world.receive(0, kMpiRequestTag))) measured++;
  } catch (...) {
    set_worker_wait_hook(std::move(before));
    throw;
  }
  set_worker_wait_hook(std::move(before));
  spdlog::info("rank {} ({}): stopped by rank 0 after {} requests", world.rank(), world.host(), measured);
  return 0;
}

}  // namespace ts
