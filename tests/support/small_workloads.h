#pragma once
// A small real model (MatMul + bias + Relu, one workload) and hand-written schedules of its
// workload, shared by the Measurer, CompiledModel and CLI tests.
#include <Halide.h>

#include <string>
#include <vector>

#include "graph/workload.h"
#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "schedule/default_tile.h"
#include "schedule/schedule.h"
#include "tune/records_db.h"

namespace ts::test {

// Whether this host's code has 16 float lanes (AVX-512): the expectations of the default rule's
// tile and prefetch arithmetic below assume them (blocked layouts by 16, its register budget).
bool host_has_avx512();
// Skips the test on a host without AVX-512, saying why.
#define TS_SKIP_UNLESS_AVX512(why)                                                                \
  if (!::ts::test::host_has_avx512()) GTEST_SKIP() << "needs AVX-512 (16 float lanes): " << (why)

// x[16,32] x W[32,24] + b[24], then Relu; W and b are initializers. Saved under temp_dir().
std::string save_matmul_relu_model();
// Its only workload (imported with the default passes, partitioned).
Workload matmul_relu_workload();
// A complete schedule of that workload: output and accumulator at root, their innermost pure
// loop vectorized by `width` (in the accumulator's update just outside the reduction loop), the
// outermost pure loop of the output and of the update run in parallel when `parallel`. Stage
// and loop names come from the workload's PipelineView.
Schedule matmul_relu_schedule(const Workload& w, int width, bool parallel);

// The workloads of models/<file> (a graph-only zoo model), imported quietly with the default
// passes and partitioned.
std::vector<Workload> zoo_workloads(const std::string& file);

// A hand-written Halide pipeline: scaled(x, y) = 2 a(x, y) -> acc = scaled x b (pure init +
// update over r in [0, 20)) -> out = max(acc, 0); out and acc are 40 x 33, a 20 x 33, b 40 x 20.
std::vector<Halide::Func> scaled_matmul_pipeline();

// A real ONNX model (saved under temp_dir(), imported with the default passes): Conv 3->8 3x3 +
// BatchNormalization + Relu + MaxPool 2x2 + Reshape + Gemm (transB) + Softmax on x[1,3,12,12].
Graph small_cnn();

// x -> 1x1 conv to `mid` channels -> k x k conv (pad k / 2) to `out` channels + Relu -> 1x1 conv
// to 8, saved as temp_dir()/file: the middle workload (Conv+Relu) reads and writes blocked
// activations.
std::string save_conv_chain(const std::string& file, int64_t in, int64_t mid, int64_t out, int64_t h, int64_t w,
                            int64_t k = 3);
// The Conv+Relu workload of save_conv_chain's model, its layouts planned for 16 lanes.
Workload conv_relu_workload(const std::string& path);
// The Winograd Conv+Relu workload of a 16 -> 32 -> 48 conv chain at 14 x 14 saved to `file`, at
// 1 thread (empty name: Winograd was not chosen).
Workload winograd_conv_relu_workload(const std::string& file);

// The facts of w's one register tile of the default rule, for this machine (a test failure when
// it has not exactly one).
TileFacts only_tile(const Workload& w);

// The default rule's schedule of `w` on this host with `knobs` (its variant; none: the rule).
Schedule rule_variant(const Workload& w, const DefaultKnobs& knobs);

// Options for a Measurer that only checks variants against its reference: one run, no warmup,
// its code cache in temp_dir()/cache_name.
MeasureOptions check_only_options(const std::string& cache_name);

// Checks (gtest expectations) that the default rule's variant under each knob set computes what
// the rule computes: a Measurer with check_only_options(cache_name), whose reference is the rule.
void expect_variants_match_rule(const Workload& w, const std::string& cache_name,
                                const std::vector<DefaultKnobs>& variants);

// A valid record of schedule `s` of `w` measured at `seconds`, for RecordsDB::add.
Record measured_record(const Workload& w, const Schedule& s, double seconds);

// The lowered statement of a scheduled workload lowering (task prefetch passes added, as the
// compile half adds them) up to a renaming of identifiers: every name (Funcs, loops, Halide's
// temporaries and closures, which differ between two lowerings in one process: "$N" suffixes,
// "_N" in C names, t123) is replaced by its order of first appearance, so two statements are
// equal when one is the other with names changed one for one.
std::string renamed_statement(LoweredWorkload& lw);

}  // namespace ts::test
