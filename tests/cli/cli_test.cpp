// The `tensorsched` command on bad input: a one-line error naming the problem and a non-zero
// exit code, never a crash.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include "api/compile_model.h"
#include "graph/npy.h"
#include "measure/workload_compiler.h"
#include "schedule/rule_sketch.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "schedule/schedule.h"
#include "features/features.h"
#include "tune/records_db.h"
#include "tune/tuner.h"

namespace ts {
namespace {

struct Result {
  int code;
  std::string out;  // stdout + stderr
};

Result run_cli(const std::string& args) {
  std::string cmd = std::string(TENSORSCHED_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

void expect_one_line_error(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("tensorsched: error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
}

TEST(Cli, MissingFile) { expect_one_line_error(run_cli("info /nonexistent.onnx"), "/nonexistent.onnx: no such file"); }

TEST(Cli, SpecialFilesAndDanglingLinksAreRefused) {
  const std::string fifo = (test::temp_dir() / "model.fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_one_line_error(run_cli("info " + fifo), "is not a regular file (a FIFO, device or socket)");
  expect_one_line_error(run_cli("convert /dev/zero " + (test::temp_dir() / "z.npy").string()), "/dev/zero: is not a regular file");
  const std::string link = (test::temp_dir() / "records.db").string(), target = (test::temp_dir() / "nowhere.db").string();
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  const std::string model = test::save_matmul_relu_model();
  expect_one_line_error(run_cli("tune " + model + " --db " + link + " --trials 1"), "a symbolic link to nothing");
  EXPECT_FALSE(std::filesystem::exists(target));
  expect_one_line_error(run_cli("tune " + model + " --db " + (test::temp_dir() / "t.db").string() +
                                " --trials 1 --workloads 0123456789abcdef"),
                        "no workload has key '0123456789abcdef'");
}

TEST(Cli, CheckIsNotFooledByAnInfiniteReference) {
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {3}).node("Relu", {"x"}, {"y"}).output("y");
  const std::string model = b.save("relu_inf.onnx");
  const auto set = test::temp_dir() / "inf_case" / "test_data_set_0";
  std::filesystem::create_directories(set);
  Tensor x = Tensor::from_i64({1, 1, 2}, {3}).cast(DType::Float32);
  x.set_f64(0, INFINITY);
  Tensor wrong = Tensor::from_i64({1, 100, 200}, {3}).cast(DType::Float32);
  wrong.set_f64(0, INFINITY);  // the model produces +Inf there too; the rest is far off
  write_tensor_pb(x, "x", (set / "input_0.pb").string());
  write_tensor_pb(wrong, "y", (set / "output_0.pb").string());
  Result r = run_cli("run " + model + " --iters 0 --check " + (test::temp_dir() / "inf_case").string() +
                     " --cache-dir " + (test::temp_dir() / "cache").string());
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos) << r.out;
}

TEST(Cli, NotOnnxAndTruncated) {
  std::string text = (test::temp_dir() / "notes.onnx").string();
  std::ofstream(text) << "hello\n";
  expect_one_line_error(run_cli("info " + text), "not an ONNX model");
  std::string model = std::string(TENSORSCHED_TESTDATA_DIR) + "/node/test_conv_with_strides_padding/model.onnx";
  std::ifstream in(model, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::string cut = (test::temp_dir() / "cut.onnx").string();
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 9);
  expect_one_line_error(run_cli("info " + cut), "not an ONNX model");
}

TEST(Cli, UnsupportedOp) {
  std::string model = std::string(TENSORSCHED_TESTDATA_DIR) + "/node/test_lstm_defaults/model.onnx";
  expect_one_line_error(run_cli("run " + model), "op LSTM (opset");
  // `info` still shows what it read, then the error.
  Result info = run_cli("info " + model);
  EXPECT_EQ(info.code, 1) << info.out;
  EXPECT_NE(info.out.find("1 x LSTM  (not supported)"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("output Y_h float32 [1,3,3]"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("tensorsched: error: " + model + ": node 'LSTM_0': op LSTM (opset 14)"), std::string::npos)
      << info.out;

  // Every unsupported op is reported at once, with a node using it.
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {4, 4})
      .node("Det", {"x"}, {"d"}, {}, "det_a")
      .node("Det", {"x"}, {"e"}, {}, "det_b")
      .node("Relu", {"x"}, {"r"})
      .node("NonZero", {"r"}, {"nz"}, {}, "nonzero")
      .output("d")
      .output("e")
      .output("nz", DType::Int64);
  expect_one_line_error(run_cli("workloads " + b.save("two_unsupported.onnx")),
                        "2 ops are not supported: op Det (opset 13) at node 'det_a' and 1 more; op NonZero (opset 13) "
                        "at node 'nonzero'");
}

TEST(Cli, NamesWithTerminalEscapesArePrintedHarmless) {
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {4, 4}).node("Det", {"x"}, {"d"}, {}, "evil\x1b[2J\x1b[31mnode").output("d");
  Result r = run_cli("run " + b.save("escapes.onnx"));
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  expect_one_line_error(r, "node 'evil?[2J?[31mnode'");
}

TEST(Cli, DynamicDimensionAndShapeFlag) {
  test::OnnxBuilder b(13);
  b.dynamic_input("image", DType::Float32, {-1, 3, 8, 8}).node("Relu", {"image"}, {"y"}).output("y");
  std::string path = b.save("dynamic.onnx");
  expect_one_line_error(run_cli("info " + path), "input 'image': dimension 0 ('dyn0') is dynamic; fix it with --shape image=");
  Result ok = run_cli("info " + path + " --shape image=2,3,8,8");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("output y float32 [2,3,8,8]"), std::string::npos) << ok.out;
  Result by_name = run_cli("info " + path + " --shape dyn0=5");  // the symbolic dimension, by its name
  EXPECT_EQ(by_name.code, 0) << by_name.out;
  EXPECT_NE(by_name.out.find("output y float32 [5,3,8,8]"), std::string::npos) << by_name.out;
  expect_one_line_error(run_cli("info " + path + " --shape nothere=1"),
                        "'nothere', which is neither a graph input nor a symbolic dimension");
  expect_one_line_error(run_cli("info " + path + " --shape image=a"), "not a positive integer");
  expect_one_line_error(run_cli("info " + path + " --shape image=100000,3,1000,1000"), "is 2 GiB or more");
}

TEST(Cli, UnsupportedType) {
  std::string model = std::string(TENSORSCHED_TESTDATA_DIR) + "/node/test_cast_FLOAT_to_FLOAT16/model.onnx";
  expect_one_line_error(run_cli("info " + model), "FLOAT16 is not supported");
}

TEST(Cli, ConformanceJsonSummary) {
  Result r = run_cli(std::string("conformance --json -j 1 ") + TENSORSCHED_TESTDATA_DIR + "/node/test_relu " +
                     TENSORSCHED_TESTDATA_DIR + "/node/test_lstm_defaults");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(R"("case":"node/test_relu")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"({"summary": {"pass": 1, "fail": 0, "unsupported": 1, "error": 0}})"), std::string::npos) << r.out;
}

TEST(Cli, DbExportImportRoundTrip) {
  std::string src = (test::temp_dir() / "a.db").string(), dst = (test::temp_dir() / "b.db").string();
  std::string jsonl = (test::temp_dir() / "records.jsonl").string();
  {
    RecordsDB db(src);
    Record r;
    r.workload.exact_key = "in0:float32[1,8,6,6];Relu(in0)->t0;out t0[1,8,6,6];";
    r.workload.class_key = "in0:float32;Relu(in0)->t0;out t0;";
    r.workload.name = "Relu";
    Schedule sched;  // the default's nest: a schedule import can replay
    r.schedule_json = sched.to_json();
    r.schedule_hash = sched.hash();
    r.times = {1e-3, 1.1e-3, 0.9e-3};
    r.policy = "random";
    db.add(r);
  }
  Result ex = run_cli("db export --db " + src + " --jsonl " + jsonl);
  EXPECT_EQ(ex.code, 0) << ex.out;
  Result im = run_cli("db import --db " + dst + " --jsonl " + jsonl);
  EXPECT_EQ(im.code, 0) << im.out;
  EXPECT_NE(im.out.find("imported 1 new records (0 already present, 0 lines rejected; 1 in total)"), std::string::npos)
      << im.out;
  Result again = run_cli("db import --db " + dst + " --jsonl " + jsonl);
  EXPECT_NE(again.out.find("imported 0 new records (1 already present, 0 lines rejected; 1 in total)"),
            std::string::npos)
      << again.out;
  // A bad line is rejected with its number (exit 1); the lines around it still import.
  std::string text_lines;
  {
    std::ifstream in(jsonl);
    std::getline(in, text_lines);
  }
  auto other = nlohmann::json::parse(text_lines);
  other["timestamp_us"] = 12345;
  const std::string mixed = (test::temp_dir() / "mixed.jsonl").string();
  std::ofstream(mixed) << R"({"schedule": [[[[1]]]]})" << "\n" << other.dump() << "\n";
  const std::string third = (test::temp_dir() / "c.db").string();
  Result partial = run_cli("db import --db " + third + " --jsonl " + mixed);
  EXPECT_EQ(partial.code, 1) << partial.out;
  EXPECT_NE(partial.out.find(mixed + ": line 1: rejected: not a tensorsched record"), std::string::npos) << partial.out;
  EXPECT_NE(partial.out.find("imported 1 new records"), std::string::npos) << partial.out;
  EXPECT_EQ(RecordsDB(third).count(), 1);
  EXPECT_EQ(RecordsDB(dst).best(  // the imported record is a usable best record
                "in0:float32[1,8,6,6];Relu(in0)->t0;out t0[1,8,6,6];", 1)
                .size(),
            1u);
  // The database is never its own output, and reading a missing one creates nothing.
  const auto size = std::filesystem::file_size(src);
  expect_one_line_error(run_cli("db export --db " + src + " --jsonl " + src), "the JSONL file is the database itself");
  EXPECT_EQ(std::filesystem::file_size(src), size);
  EXPECT_EQ(RecordsDB(src).count(), 1);
  const std::string missing = (test::temp_dir() / "mistyped.db").string();
  expect_one_line_error(run_cli("db export --db " + missing), "no such records database");
  EXPECT_FALSE(std::filesystem::exists(missing));
  for (const std::string read_only : {"costmodel eval --db ", "db machines --db ", "report -o /tmp/x --db "}) {
    Result r = run_cli(read_only + missing);
    EXPECT_NE(r.code, 0) << read_only << r.out;
    EXPECT_TRUE(r.out.find("File does not exist") != std::string::npos ||
                r.out.find("no such records database") != std::string::npos)
        << read_only << r.out;
    EXPECT_FALSE(std::filesystem::exists(missing)) << read_only;
  }
  // A file that is not a records database: one-line error, exit 1.
  std::string text = (test::temp_dir() / "notes.db").string();
  std::ofstream(text) << "not sqlite\n";
  expect_one_line_error(run_cli("db export --db " + text), "not a tensorsched records database");
}

TEST(Cli, WorkloadsStmtPrintsTheDefaultSchedulesLoweredCode) {
  const std::string model = test::save_matmul_relu_model();
  const Workload w = test::matmul_relu_workload();
  Result r = run_cli("workloads " + model + " --stmt " + w.key_hash());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("produce output_"), std::string::npos) << r.out;  // the output stage's loop nest
  EXPECT_NE(r.out.find("ramp("), std::string::npos) << r.out;            // vectorized by the default schedule
  expect_one_line_error(run_cli("workloads " + model + " --stmt 0123456789abcdef"), "no workload with key 0123456789abcdef");
}

TEST(Cli, WorkloadsSchedulePrintsTheDefaultRuleAsData) {
  const std::string model = test::save_matmul_relu_model();
  const Workload w = test::matmul_relu_workload();
  Result src = run_cli("workloads " + model + " --schedule " + w.key_hash());
  EXPECT_EQ(src.code, 0) << src.out;
  EXPECT_NE(src.out.find(".compute_root()"), std::string::npos) << src.out;  // the output, at root
  EXPECT_NE(src.out.find(".vectorize("), std::string::npos) << src.out;
  Result json = run_cli("workloads " + model + " --schedule " + w.key_hash() + " --json");
  EXPECT_EQ(json.code, 0) << json.out;
  const Schedule s = Schedule::from_json(json.out);  // the same data, replayable
  EXPECT_NE(src.out.find(s.hash()), std::string::npos) << src.out;
  expect_one_line_error(run_cli("workloads " + model + " --schedule 0123456789abcdef"), "no workload with key 0123456789abcdef");
}

// `db featurize` gives records of an older features version the current features, from the
// subgraph the database keeps (the model file is gone), and says what it did.
TEST(Cli, DbFeaturizeRecomputesOlderFeaturesWithoutTheModel) {
  const Workload w = test::matmul_relu_workload();
  const std::string path = (test::temp_dir() / "featurize_cli.db").string();
  std::filesystem::remove(path);
  {
    RecordsDB db(path);
    Record r = test::measured_record(w, test::matmul_relu_schedule(w, 8, false), 1e-3);
    r.features = std::vector<float>(7, 1.0f);  // an older version's layout
    r.features_version = kFeaturesVersion - 1;
    db.add(r);
  }
  Result r = run_cli("db featurize --db " + path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 records featurized, 0 already current"), std::string::npos) << r.out;
  RecordsDB db(path, RecordsDB::Open::MustExist);
  const Record back = db.records(w.exact_key).at(0);
  EXPECT_EQ(back.features_version, kFeaturesVersion);
  EXPECT_EQ(back.features.size(), flat_feature_names().size());
  expect_one_line_error(run_cli("db featurize --db " + (test::temp_dir() / "no_such.db").string()), "no_such.db");
}

// `db measure` compiles and times a record's schedule again from the subgraph the database keeps
// (the model file is gone), checked against the default, beside what the record holds.
TEST(Cli, DbMeasureTimesARecordAgainWithoutTheModel) {
  const Workload w = test::matmul_relu_workload();
  const std::string path = (test::temp_dir() / "measure_cli.db").string();
  std::filesystem::remove(path);
  int64_t id = 0;
  {
    RecordsDB db(path);
    id = db.add(test::measured_record(w, test::matmul_relu_schedule(w, 8, false), 1e-3));
  }
  Result r = run_cli(fmt::format("db measure --db {} --record {} --repeats 3 --json", path, id));
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('[')));
  ASSERT_EQ(j.size(), 1u) << r.out;
  EXPECT_EQ(j[0]["id"], id);
  EXPECT_EQ(j[0]["workload"], w.key_hash());
  EXPECT_DOUBLE_EQ(j[0]["recorded"]["median"].get<double>(), 1e-3);
  EXPECT_EQ(j[0]["now"]["error_kind"], "") << j[0].dump();
  EXPECT_GT(j[0]["now"]["median"].get<double>(), 0);
  EXPECT_GT(j[0]["default_median"].get<double>(), 0);
  expect_one_line_error(run_cli(fmt::format("db measure --db {} --record {}", path, id + 100)),
                        fmt::format("no record {}", id + 100));
}

// Each workload `tensorsched workloads MODEL --json --threads T` lists (0: all cores).
std::vector<nlohmann::json> listed_workloads(const std::string& model, int threads = 0) {
  Result r = run_cli("workloads " + model + " --json -q --threads " + std::to_string(threads));
  EXPECT_EQ(r.code, 0) << r.out;
  std::vector<nlohmann::json> out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == '{') out.push_back(nlohmann::json::parse(line));
  return out;
}

std::set<std::string> workload_keys(const std::string& model, int threads) {
  std::set<std::string> keys;
  for (const auto& w : listed_workloads(model, threads)) keys.insert(w["key"].get<std::string>());
  return keys;
}

// A 64-channel 3x3 conv at 14 x 14 runs as Winograd on 1 thread and directly on 2 (plan_winograd
// asks more pixels per core): `workloads --threads` lists the partition `run` and `tune` use with
// those threads, and tune names the option when a key is not in its partition.
TEST(Cli, WorkloadsListThePartitionOfTheThreads) {
  const std::string model = test::save_conv_chain("cli_threads_partition.onnx", 16, 64, 64, 14, 14);
  const std::set<std::string> one = workload_keys(model, 1), two = workload_keys(model, 2);
  ASSERT_FALSE(one.empty());
  ASSERT_NE(one, two) << "the Winograd plan did not change with the threads";
  Result r = run_cli("run " + model + " --threads 1 --iters 1 --profile --json -q");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json run = nlohmann::json::parse(r.out.substr(r.out.rfind("\n{") + 1));
  for (const auto& step : run["profile"]) EXPECT_TRUE(one.count(step["key"].get<std::string>())) << step.dump();
  std::string only_two;
  for (const auto& k : two)
    if (!one.count(k)) only_two = k;
  ASSERT_FALSE(only_two.empty());
  expect_one_line_error(run_cli("tune " + model + " --db " + (test::temp_dir() / "threads_partition.db").string() +
                                " --trials 1 --threads 1 --workloads " + only_two),
                        "`tensorsched workloads --threads N` lists them");
}

// `tune --network-evals N` times the network variant of the conv with the most weight pages in
// the whole model after the confirmations (tune/network_refine.h), prints the trial and puts it
// in the JSON; it is refused with --reuse-from, whose options it does not belong to.
// Reuse's options without --reuse-from are refused, naming the option: a search would ignore them.
TEST(Cli, ReuseOptionsNeedReuseFrom) {
  const std::string model = test::save_conv_chain("cli_reuse_options.onnx", 16, 32, 16, 8, 8, 1);
  const std::string tune = "tune " + model + " --db " + (test::temp_dir() / "cli_reuse_options.db").string() + " --trials 1 ";
  for (const std::string option : {"--same-class-only", "--full-evals 3", "--donor auto"})
    expect_one_line_error(run_cli(tune + option), option.substr(0, option.find(' ')) + " applies only with --reuse-from");
}

TEST(Cli, TuneTimesNetworkVariantsInTheModel) {
  const std::string model = test::save_conv_chain("cli_network.onnx", 64, 2048, 512, 7, 7, 1);
  const std::string db = (test::temp_dir() / "cli_network.db").string();
  std::filesystem::remove(db);
  const std::string tune = "tune " + model + " --db " + db + " --trials 1 --threads 1 --repeats 2 --e2e-iters 0";
  // The conv with the most weight pages whose default has a network variant on this host.
  const Graph g = load_model(model, LoadOptions{});
  const Partition part = partition_graph(g);
  const Workload* most = nullptr;
  int64_t most_bytes = 0;
  for (const auto& w : part.workloads) {
    const RuleSketch space(lower_workload(w).outputs, host_code_target());
    const int64_t bytes = w.count * space.weight_bytes();
    if (space.network_variant() && bytes > most_bytes) most = &w, most_bytes = bytes;
  }
  if (!most) GTEST_SKIP() << "the rule prefetches none of these convs on this host (no variant to time)";
  Result r = run_cli(tune + " --network-evals 1 --json -q");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  {
    RecordsDB records(db);
    const std::optional<Record> used = used_record(records, most->exact_key, 1);
    if (used && used->policy == kConfirmPolicy) GTEST_SKIP() << "the search's trial beat the default alone: it stays";
  }
  ASSERT_EQ(j["network"].size(), 1u) << j["network"].dump();
  EXPECT_EQ(j["network"][0]["key"], most->key_hash());
  EXPECT_EQ(j["network"][0]["variant"], R"({"prefetch":"2"})");
  EXPECT_EQ(j["network"][0]["threads"], 1);
  EXPECT_EQ(j["network"][0]["error"], "");
  Result text = run_cli(tune + " --network-evals 1");
  ASSERT_EQ(text.code, 0) << text.out;
  const size_t table = text.out.find("in the network   name");
  ASSERT_NE(table, std::string::npos) << text.out;
  EXPECT_NE(text.out.find(most->key_hash(), table), std::string::npos) << text.out;
  Result none = run_cli(tune + " --network-evals 0 --json -q");
  ASSERT_EQ(none.code, 0) << none.out;
  EXPECT_TRUE(nlohmann::json::parse(none.out.substr(none.out.find('{')))["network"].empty());
  expect_one_line_error(run_cli("tune " + model + " --db " + db + " --reuse-from " + db + " --network-evals 1"),
                        "--network-evals does not apply");
}

TEST(Cli, RunWithTunedSchedulesFromDb) {
  const std::string model = test::save_matmul_relu_model();
  const Workload w = test::matmul_relu_workload();
  const std::string db_path = (test::temp_dir() / "records.db").string();
  RecordsDB(db_path).add(test::measured_record(w, test::matmul_relu_schedule(w, 8, true), 1e-3));
  const std::string run = "run " + model + " --iters 1 --cache-dir " + (test::temp_dir() / "cache").string();

  Result r = run_cli(run + " --db " + db_path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tuned schedules: 1 of 1 workloads (" + db_path + ")"), std::string::npos) << r.out;
  Result j = run_cli(run + " --db " + db_path + " --json");
  EXPECT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find(R"("tuned":1)"), std::string::npos) << j.out;
  Result untuned = run_cli(run + " --json");
  EXPECT_NE(untuned.out.find(R"("tuned":0)"), std::string::npos) << untuned.out;

  std::string text = (test::temp_dir() / "notes.db").string();
  std::ofstream(text) << "not sqlite\n";
  expect_one_line_error(run_cli(run + " --db " + text), "not a tensorsched records database");
  expect_one_line_error(run_cli(run + " --db " + (test::temp_dir() / "missing.db").string()), "no such records database");
}

// The key hash of the workload named `name` in `tensorsched workloads MODEL --json`.
std::string workload_key(const std::string& model, const std::string& name) {
  for (const auto& w : listed_workloads(model))
    if (w["name"] == name) return w["key"];
  ADD_FAILURE() << "no workload " << name << " in " << model;
  return "";
}

TEST(Cli, RunWithKnobsCompilesThatVariantOfTheRuleAndComputesTheSame) {
  const std::string model = test::save_conv_chain("knobs_chain.onnx", 8, 32, 32, 14, 14, 5);
  const std::string key = workload_key(model, "Conv+Relu");
  const std::string out = (test::temp_dir() / "knobs_out").string();
  const std::string run = "run " + model + " --iters 1 --json --cache-dir " + (test::temp_dir() / "knobs-cache").string();
  Result plain = run_cli(run + " --output " + out + "/default");
  ASSERT_EQ(plain.code, 0) << plain.out;
  const std::string knobs = " --knobs '" + key + R"(={"columns":"3","blocks":"1"}')";
  Result variant = run_cli(run + knobs + " --output " + out + "/variant");
  ASSERT_EQ(variant.code, 0) << variant.out;
  EXPECT_NE(variant.out.find(R"("compiled":1)"), std::string::npos) << variant.out;  // only the variant is new code
  EXPECT_NE(variant.out.find(R"("tuned":1)"), std::string::npos) << variant.out;
  EXPECT_NE(run_cli(run + knobs).out.find(R"("compiled":0)"), std::string::npos);  // and cached from then on

  for (const auto& f : std::filesystem::directory_iterator(out + "/default")) {
    if (f.path().extension() != ".npy") continue;
    const Tensor a = read_tensor_file(f.path().string());
    const Tensor b = read_tensor_file(out + "/variant/" + f.path().filename().string());
    ASSERT_EQ(a.shape, b.shape);
    for (int64_t i = 0; i < a.size(); i++) ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-4f) << f.path() << " element " << i;
  }

  expect_one_line_error(run_cli(run + " --knobs 0123456789abcdef={}"), "--knobs '0123456789abcdef={}': " + model + " has no workload");
  expect_one_line_error(run_cli(run + " --knobs " + key), "expected KEY=KNOBS_JSON");
  expect_one_line_error(run_cli(run + " --knobs '" + key + "={'"), "not JSON");
  expect_one_line_error(run_cli(run + " --knobs '" + key + R"(={"colums":"3"}')"), "colums");
}

TEST(Cli, ForeignRecordsAreRefusedUnlessAllowed) {
  const std::string model = test::save_matmul_relu_model();
  const Workload w = test::matmul_relu_workload();
  const std::string db_path = (test::temp_dir() / "foreign.db").string();
  Record r = test::measured_record(w, test::matmul_relu_schedule(w, 8, true), 1e-3);
  r.machine = R"({"cpu":"a faster machine","cores":128})";
  RecordsDB(db_path).add(r);
  const std::string run = "run " + model + " --iters 1 --cache-dir " + (test::temp_dir() / "cache").string() + " --db " + db_path;

  Result refused = run_cli(run);
  EXPECT_EQ(refused.code, 0) << refused.out;
  EXPECT_NE(refused.out.find("tuned schedules: 0 of 1 workloads"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("tensorsched: warning: " + db_path + ": 1 records"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("--allow-foreign-records"), std::string::npos) << refused.out;
  Result allowed = run_cli(run + " --allow-foreign-records");
  EXPECT_NE(allowed.out.find("tuned schedules: 1 of 1 workloads"), std::string::npos) << allowed.out;
  Result quiet = run_cli(run + " --quiet --json");  // warnings are logged on stderr; JSON keeps them too
  EXPECT_NE(quiet.out.find(R"("warnings")"), std::string::npos) << quiet.out;

  Result machines = run_cli("db machines --db " + db_path);
  EXPECT_EQ(machines.code, 0) << machines.out;
  EXPECT_NE(machines.out.find("a faster machine, 128 cores"), std::string::npos) << machines.out;
}

TEST(Cli, VersionAndCacheCommands) {
  Result v = run_cli("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("tensorsched " TENSORSCHED_VERSION " (build " TENSORSCHED_VERSION "-"), std::string::npos) << v.out;
  const std::string cache = (test::temp_dir() / "cli-cache").string();
  std::filesystem::create_directories(cache + "/0.0.1-stale/x86");
  std::ofstream(cache + "/0.0.1-stale/x86/ts_old.so") << "old code";
  const std::string model = test::save_matmul_relu_model();
  ASSERT_EQ(run_cli("run " + model + " --iters 0 --cache-dir " + cache).code, 0);
  Result info = run_cli("cache info --cache-dir " + cache);
  EXPECT_EQ(info.code, 0) << info.out;
  EXPECT_NE(info.out.find("0.0.1-stale"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("this build"), std::string::npos) << info.out;
  Result clear = run_cli("cache clear --stale --cache-dir " + cache);
  EXPECT_NE(clear.out.find("removed 1 build folder(s)"), std::string::npos) << clear.out;
  EXPECT_FALSE(std::filesystem::exists(cache + "/0.0.1-stale"));
  EXPECT_EQ(run_cli("run " + model + " --iters 0 --json --cache-dir " + cache).out.find(R"("compiled":0)") != std::string::npos, true);
}


// `dataset networks` writes the set's files, the same bytes for the same seed, each a model the
// importer accepts; `run` runs one.
TEST(Cli, DatasetNetworksWritesTheSameNetworksForTheSameSeed) {
  const auto a = test::temp_dir() / "networks_a", b = test::temp_dir() / "networks_b";
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
  Result r = run_cli("dataset networks --count 3 --seed 5 --max-ops 12 --out " + a.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3 networks (seed 5)"), std::string::npos) << r.out;
  ASSERT_EQ(run_cli("dataset networks --count 3 --seed 5 --max-ops 12 --out " + b.string()).code, 0);
  for (int i = 0; i < 3; i++) {
    const std::string name = fmt::format("random_5_{:05d}.onnx", i);
    auto bytes = [](const std::filesystem::path& p) {
      std::ifstream in(p, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    ASSERT_TRUE(std::filesystem::exists(a / name)) << r.out;
    EXPECT_EQ(bytes(a / name), bytes(b / name)) << name;
    EXPECT_EQ(run_cli("info " + (a / name).string()).code, 0) << name;
  }
  Result run = run_cli("run " + (a / "random_5_00000.onnx").string() + " --iters 1");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run_cli("dataset networks --count 1 --min-ops 9 --max-ops 3 --out " + a.string()).out.find("min_ops"),
            std::string::npos);
}

}  // namespace
}  // namespace ts
