// `tensorsched dataset networks --count N --seed S --out DIR`: random networks (dataset/
// random_network.h) written as ONNX files, one line per network: file, operators, inputs,
// outputs, depth, GFLOP-free size facts (tensors, weights' bytes).
// `tensorsched dataset generate (--networks DIR | --count N --seed S) --db FILE`: the measured
// data set (dataset/dataset_generate.h); under mpirun every rank measures its share into its
// own database and rank 0 merges them into FILE.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/compile_model.h"
#include "cli/commands.h"
#include "dataset/dataset_file.h"
#include "dataset/dataset_generate.h"
#include "dataset/dataset_stats.h"
#include "dataset/random_network.h"
#include "graph/error.h"
#include "graph/onnx_export.h"
#include "measure/mpi_world.h"

namespace ts {

namespace {

struct NetworksArgs {
  int count = 10;
  uint64_t seed = 0;
  std::string out;
  RandomNetworkOptions options;
};

// The file of network `index` of a set made with `seed`.
std::string network_file(uint64_t seed, int index) { return fmt::format("random_{}_{:05d}.onnx", seed, index); }

// Writes network `index` of the set made with `seed` into `folder`; returns it and its path.
std::pair<RandomNetwork, std::string> write_network(const std::string& folder, uint64_t seed, int index,
                                                    const RandomNetworkOptions& options) {
  RandomNetwork net = random_network(network_seed(seed, static_cast<uint64_t>(index)), options);
  const std::string name = network_file(seed, index);
  const std::filesystem::path path = std::filesystem::path(folder) / name;
  std::ofstream f(path, std::ios::binary);
  f << graph_to_onnx(net.graph, name);
  if (!f) throw Error(fmt::format("{}: cannot write the network", path.string()));
  return {std::move(net), path.string()};
}

int networks_command(const NetworksArgs& a) {
  std::filesystem::create_directories(a.out);
  std::map<std::string, int> op_counts;
  for (int i = 0; i < a.count; i++) {
    const auto [net, file] = write_network(a.out, a.seed, i, a.options);
    const std::filesystem::path path(file);
    int64_t weight_bytes = 0;
    for (const auto& [tname, t] : net.graph.tensors)
      if (t.value) weight_bytes += static_cast<int64_t>(t.value->bytes.size());
    for (const Node& n : net.graph.nodes) op_counts[n.op]++;
    std::cout << fmt::format("{}  {} ops, {} inputs, {} outputs, depth {}, {:.2f} MB of weights ({} drawn)\n", path.string(),
                             net.graph.nodes.size(), net.graph.inputs.size(), net.graph.outputs.size(), net.depth,
                             static_cast<double>(weight_bytes) / 1e6, net.attempts);
  }
  std::string ops;
  for (const auto& [op, c] : op_counts) ops += fmt::format(" {}:{}", op, c);
  std::cout << fmt::format("{} networks (seed {}) in {}; ops:{}\n", a.count, a.seed, a.out, ops);
  return 0;
}

struct GenerateArgs {
  std::string networks;              // folder of ONNX networks
  int count = 0;                     // or this many random networks
  uint64_t seed = 0;                 // of the random set (and of the draws)
  std::string out;                   // where the random networks are written ("" = FILE.networks)
  std::string db;                    // the records database
  bool allow_foreign = false;        // records of other machines and builds count as measured
  DatasetOptions options;
  RandomNetworkOptions network_options;
};

// Rank k > 0 of an mpirun measures into its own database beside rank 0's.
std::string rank_database(const std::string& db, int rank) { return rank == 0 ? db : fmt::format("{}.rank{}", db, rank); }

// The networks of the data set: every *.onnx of the folder by name, or the random set (this
// rank's share written into the output folder, the others left to their ranks).
std::vector<DatasetNetwork> dataset_networks(const GenerateArgs& a, int rank, int ranks) {
  std::vector<DatasetNetwork> nets;
  auto loader = [](const std::string& path) { return [path] { return load_model(path); }; };
  if (!a.networks.empty()) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(a.networks))
      if (e.path().extension() == ".onnx") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw Error(fmt::format("{}: no .onnx files", a.networks));
    for (const auto& f : files) nets.push_back({f.stem().string(), loader(f.string())});
    return nets;
  }
  const std::string folder = a.out.empty() ? a.db + ".networks" : a.out;
  std::filesystem::create_directories(folder);
  for (int i = 0; i < a.count; i++) {
    const std::string name = std::filesystem::path(network_file(a.seed, i)).stem().string();
    if (i % ranks != rank) {
      nets.push_back({name, [] { return Graph{}; }});  // another rank's: never loaded here
      continue;
    }
    const std::string path = (std::filesystem::path(folder) / network_file(a.seed, i)).string();
    if (!std::filesystem::exists(path)) write_network(folder, a.seed, i, a.network_options);
    nets.push_back({name, loader(path)});
  }
  return nets;
}

void print_summary(const DatasetSummary& s, const std::string& db, const std::string& who) {
  std::string methods, errors;
  for (const auto& [m, c] : s.methods) methods += fmt::format(" {}:{}", m, c);
  for (const auto& [e, c] : s.errors) errors += fmt::format(" {}:{}", e, c);
  std::cout << fmt::format("{}{} networks, {} workloads ({} already complete, {} failed); measured {} schedules in "
                           "{:.0f} s ({:.0f}/h) into {}{}; by method:{}; errors:{}\n",
                           who, s.networks, s.workloads, s.complete_before, s.failed_workloads, s.measured_now,
                           s.seconds, s.seconds > 0 ? 3600.0 * static_cast<double>(s.measured_now) / s.seconds : 0.0,
                           db, s.stopped ? " (stopped by the budget: run again to go on)" : "",
                           methods.empty() ? " none" : methods, errors.empty() ? " none" : errors);
  for (const auto& f : s.failures) std::cout << "  failed: " << f << "\n";
}

// Rank 0 receives every other rank's records (with subgraphs) and the models they hold, and
// adds them to its database; the others send theirs.
constexpr int kMergeTag = 71;

void merge_ranks(const MpiWorld& world, RecordsDB& db) {
  if (world.rank() != 0) {
    std::ostringstream records;
    db.export_jsonl(records);
    nlohmann::json models = nlohmann::json::array();
    for (const ModelWorkload& m : db.model_workloads())
      models.push_back({{"model", m.model}, {"exact_key", m.workload.exact_key}, {"class_key", m.workload.class_key},
                        {"name", m.workload.name}, {"flops", m.workload.flops}, {"count", m.count}});
    world.send(0, kMergeTag, nlohmann::json({{"host", world.host()}, {"models", models}}).dump() + "\n" + records.str());
    return;
  }
  for (int r = 1; r < world.size(); r++) {
    const std::string message = world.receive(r, kMergeTag);
    const size_t eol = message.find('\n');
    const nlohmann::json head = nlohmann::json::parse(message.substr(0, eol));
    std::istringstream records(eol == std::string::npos ? "" : message.substr(eol + 1));
    const RecordsDB::ImportResult res = db.import_jsonl(records, fmt::format("rank {}", r));
    std::map<std::string, std::vector<ModelWorkload>> models;
    for (const auto& m : head.at("models"))
      models[m.at("model")].push_back({"", {m.at("exact_key"), m.at("class_key"), m.at("name"), m.at("flops"), "", "", ""},
                                       m.at("count").get<int>()});
    for (const auto& [name, held] : models) db.set_model(name, held);
    std::cout << fmt::format("merged rank {} ({}): {} records added, {} already present, {} rejected, {} networks\n", r,
                             head.value("host", "?"), res.added, res.present, res.rejected.size(), models.size());
    for (const auto& [line, why] : res.rejected) std::cout << fmt::format("  rank {} line {}: {}\n", r, line, why);
  }
}

int generate_command(GenerateArgs a) {
  if (a.networks.empty() == (a.count == 0)) throw Error("dataset generate: give --networks DIR or --count N (one of them)");
  std::unique_ptr<MpiWorld> world;
  if (MpiWorld::launched_by_mpirun()) world = std::make_unique<MpiWorld>();
  const int rank = world ? world->rank() : 0;
  const int ranks = world ? world->size() : 1;
  a.options.rank = rank;
  a.options.ranks = ranks;
  if (a.options.seed == 0) a.options.seed = a.seed;
  const std::string db_path = rank_database(a.db, rank);
  RecordsDB db(db_path);
  db.set_allow_foreign(a.allow_foreign);
  const std::string who = ranks > 1 ? fmt::format("rank {}/{} ({}): ", rank, ranks, world->host()) : "";
  const DatasetSummary s = generate_dataset(dataset_networks(a, rank, ranks), db, a.options,
                                            [&](const std::string& line) { std::cerr << who << line << "\n"; });
  print_summary(s, db_path, who);
  if (world && ranks > 1) {
    world->barrier();
    merge_ranks(*world, db);
    world->barrier();
    if (rank == 0) std::cout << fmt::format("{}: {} records from {} ranks\n", a.db, db.count(), ranks);
  }
  return s.failed_workloads > 0 && s.measured_now == 0 && s.workloads == s.failed_workloads ? 1 : 0;
}

struct FileArgs {
  std::string db;     // the records database
  std::string file;   // the data set file (gzip JSONL)
  std::string split;  // export: only this split ("" = every split)
};

int stats_command(const FileArgs& a) {
  RecordsDB db(a.db, RecordsDB::Open::MustExist);
  std::cout << a.db << ": " << format_dataset_stats(dataset_stats(db));
  return 0;
}

int export_command(const FileArgs& a) {
  RecordsDB db(a.db, RecordsDB::Open::MustExist);
  const int64_t n = export_dataset(db, a.file, a.split);
  std::cout << fmt::format("{}: {} data set records written to {} ({:.2f} MB)\n", a.db, n, a.file,
                           static_cast<double>(std::filesystem::file_size(a.file)) / 1e6);
  return 0;
}

int import_command(const FileArgs& a) {
  RecordsDB db(a.db);
  const RecordsDB::ImportResult r = import_dataset(db, a.file);
  for (const auto& [line, why] : r.rejected) std::cout << fmt::format("  {} line {}: {}\n", a.file, line, why);
  std::cout << fmt::format("{}: imported {} records from {} ({} already present, {} rejected; {} in total)\n", a.db,
                           r.added, a.file, r.present, r.rejected.size(), db.count());
  return r.rejected.empty() ? 0 : 1;
}

}  // namespace

void add_dataset_command(CLI::App& app) {
  auto* ds = app.add_subcommand("dataset", "Random networks for the test bed and the data set");
  ds->require_subcommand(1);
  auto a = std::make_shared<NetworksArgs>();
  auto* nets = ds->add_subcommand("networks", "Write random networks (the graph-network paper's generator) as ONNX files");
  nets->add_option("--count", a->count, "Networks to write")->check(CLI::PositiveNumber);
  nets->add_option("--seed", a->seed, "Seed of the set: network i is random_network(network_seed(seed, i))");
  nets->add_option("--out", a->out, "Folder to write random_SEED_INDEX.onnx into")->required();
  RandomNetworkOptions& o = a->options;
  nets->add_option("--min-ops", o.min_ops, "Fewest operators a network is drawn with")->check(CLI::PositiveNumber);
  nets->add_option("--max-ops", o.max_ops, "Most operators a network is drawn with")->check(CLI::PositiveNumber);
  nets->add_option("--max-inputs", o.max_inputs, "Most runtime inputs (weights excluded)")->check(CLI::PositiveNumber);
  nets->add_option("--max-outputs", o.max_outputs, "Most outputs")->check(CLI::PositiveNumber);
  nets->add_option("--max-tensor-elements", o.max_tensor_elements, "Most elements of any tensor")->check(CLI::PositiveNumber);
  nets->add_option("--max-node-flops", o.max_node_flops, "Most FLOPs of one conv or matmul")->check(CLI::PositiveNumber);
  nets->add_option("--depth-thresh", o.depth_thresh, "Fewest nodes on the longest path (the paper's depth filter)");
  nets->add_option("--output-thresh", o.output_thresh, "Outputs beyond which a network is mostly rejected");
  on_command(nets, [a] { return networks_command(*a); });

  auto g = std::make_shared<GenerateArgs>();
  auto* gen = ds->add_subcommand("generate", "Measure K schedules per workload of networks into a records database "
                                             "(under mpirun: a share per rank, merged on rank 0)");
  gen->add_option("--networks", g->networks, "Folder of ONNX networks to measure")->check(CLI::ExistingDirectory);
  gen->add_option("--count", g->count, "Or: this many random networks (dataset networks --seed S)")->check(CLI::PositiveNumber);
  gen->add_option("--seed", g->seed, "Seed of the random networks and of the schedule draws");
  gen->add_option("--out", g->out, "Where the random networks are written (default: FILE.networks)");
  gen->add_option("--db", g->db, "Records database (rank k > 0 of mpirun: FILE.rankK, merged into FILE)")->required();
  gen->add_flag("--allow-foreign-records", g->allow_foreign,
                "Count the records of other machines and builds as measured (a data set resumed after the code "
                "generator changed); new records carry this machine's fingerprint");
  DatasetOptions& d = g->options;
  gen->add_option("--schedules-per-workload", d.schedules_per_workload, "Distinct schedules measured per workload (K)")
      ->check(CLI::PositiveNumber);
  gen->add_option("--time", d.seconds, "Wall-time budget in seconds (0 = none); a later run goes on where it stopped");
  gen->add_option("--split", d.split, "train (random networks) or heldout (the model zoo: the test set)")
      ->check(CLI::IsMember({kTrainSplit, kHeldOutSplit}));
  gen->add_option("--batch", d.batch, "Schedules compiled and run per batch")->check(CLI::PositiveNumber);
  gen->add_option("--repeats", d.measure.repeats, "Timed runs per schedule, all recorded")->check(CLI::PositiveNumber);
  gen->add_option("--threads", d.measure.threads, "Halide threads while running (0 = the default)");
  gen->add_option("--jobs", d.measure.compile_jobs, "Compiler processes at once (0 = hardware threads)");
  gen->add_option("--cache", d.measure.cache_root, "Code cache root (default: $TENSORSCHED_CACHE_DIR or ~/.cache)");
  RandomNetworkOptions& no = g->network_options;
  gen->add_option("--max-ops", no.max_ops, "Random networks: most operators")->check(CLI::PositiveNumber);
  gen->add_option("--min-ops", no.min_ops, "Random networks: fewest operators")->check(CLI::PositiveNumber);
  on_command(gen, [g] { return generate_command(*g); });

  auto f = std::make_shared<FileArgs>();
  auto* stats = ds->add_subcommand("stats", "Counts, time range, noise, op histogram and the default against the "
                                            "best sampled schedule, of a database's data set records");
  stats->add_option("--db", f->db, "Records database")->required();
  on_command(stats, [f] { return stats_command(*f); });
  auto* ex = ds->add_subcommand("export", "Write the data set records (with subgraphs) as gzip JSONL");
  ex->add_option("--db", f->db, "Records database")->required();
  ex->add_option("--out", f->file, "File to write (e.g. dataset.jsonl.gz)")->required();
  ex->add_option("--split", f->split, "Only this split")->check(CLI::IsMember({kTrainSplit, kHeldOutSplit}));
  on_command(ex, [f] { return export_command(*f); });
  auto* im = ds->add_subcommand("import", "Load a data set file (gzip or plain JSONL) into a records database");
  im->add_option("--db", f->db, "Records database (created when missing)")->required();
  im->add_option("file", f->file, "The data set file")->required();
  on_command(im, [f] { return import_command(*f); });
}

}  // namespace ts
