#pragma once
// PipelineView: what search, features and cost models see of a Halide pipeline, read from
// Halide's own IR (Function definitions), so a hand-written pipeline works like a lowered ONNX
// workload. Schedule-invariant: build it from the unscheduled Funcs.
//
// Model (see docs/design.md (src/analysis/) and the value-learning paper, sections 4 and 5.1):
//  - A Stage is one Func. Its pure definition and each update definition are Definitions of the
//    stage (index 0 = pure, 1.. = updates in order): they share the Func's storage and pure
//    loops but each has its own loop nest, op histogram and accesses.
//  - Stages are in realization order: producers before consumers, ties broken by name. Names are
//    Halide's own (Halide makes a reused Func name unique: "f$2").
//  - Inputs (ImageParams, Buffers) are not stages; edges name them as producers. Halide reads an
//    ImageParam through an implicit rename Func "<name>_im"; the view folds it into the input.
//  - Loops of a definition, in this order: the Func's pure args it uses (arg order, innermost
//    first), then its reduction variables (RDom order, innermost first). Halide's default nest
//    puts the reduction loops inside the pure ones; this order only fixes matrix columns.
//  - Extents: Func estimates (set_estimate) and ImageParam dim estimates; where a Func or input
//    has none, the union of what its consumers read (like Halide's bounds inference).
//  - Op counts are per iteration of one definition, over its expressions after simplification
//    and common subexpression elimination (what the generated code computes).
#include <Halide.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts {

// A loop of a definition (or a dimension of a stage or input).
struct Loop {
  std::string name;       // Halide variable name ("x", "d0", "conv_r$x")
  int64_t min = 0;        // first index
  int64_t extent = 0;     // number of iterations; 0 when unknown
  bool reduction = false; // an RDom variable (update definitions only)
};

// One dimension of an index into a producer (or of a definition's own store).
struct AccessDim {
  bool affine = false;           // index = sum(coeffs[k] * loop_k) + constant over this definition's loops
  std::vector<int64_t> coeffs;   // per loop of the definition (its `loops` order); zeros when not affine
  int64_t constant = 0;          // constant term (0 when not affine)
  std::vector<int> depends_on;   // loop indices the index mentions (affine or not), ascending
  std::string expr;              // the simplified index expression, for reading and debugging
  int div_loop = -1;             // the index is loops[div_loop] / divisor (a panel index), before loop ranges are applied; -1 = not
  int64_t divisor = 0;           // that constant divisor (> 1), 0 when div_loop is -1
};

// One distinct call site of a producer in a definition (identical index expressions merged).
struct Access {
  int definition = 0;            // consumer definition index (0 = pure, 1.. = updates)
  std::vector<AccessDim> dims;   // per producer dimension (Halide order, innermost first)
};

// An integer interval [min, min + extent).
struct Range {
  int64_t min = 0;     // first index
  int64_t extent = 0;  // number of indices
};

// Producer -> consumer: the consumer stage reads the producer (a stage or an input).
struct Edge {
  std::string producer;               // stage or input name
  std::string consumer;               // stage name
  bool producer_is_input = false;     // producer is an ImageParam or Buffer
  std::vector<Access> accesses;       // call sites, by definition then index text
  std::vector<Range> footprint;       // producer box one full realization of the consumer reads
  int64_t footprint_elements = 0;     // product of footprint extents
  bool footprint_exact = true;        // false when some dim fell back to the producer's full range
  int64_t loads = 0;                  // loads of this producer per consumer realization (sum of access * points)
};

// Operations of one iteration of a definition, by kind.
struct OpHistogram {
  int64_t f_add = 0;      // float add
  int64_t f_sub = 0;      // float subtract
  int64_t f_mul = 0;      // float multiply
  int64_t f_div = 0;      // float divide and mod
  int64_t f_minmax = 0;   // float min / max
  int64_t f_cmp = 0;      // float comparisons
  int64_t f_select = 0;   // selects of float values
  int64_t f_math = 0;     // float calls: exp, log, sqrt, pow, trig, floor, abs, ...
  int64_t i_add = 0;      // integer add and subtract
  int64_t i_mul = 0;      // integer multiply
  int64_t i_divmod = 0;   // integer divide and modulo
  int64_t i_minmax = 0;   // integer min / max (clamps)
  int64_t i_cmp = 0;      // integer comparisons
  int64_t i_select = 0;   // selects of integer values
  int64_t i_shift = 0;    // shifts
  int64_t i_bit = 0;      // bitwise and / or / xor / not
  int64_t i_other = 0;    // other integer calls and intrinsics
  int64_t bool_ops = 0;   // and / or / not, comparisons and selects of bools
  int64_t casts = 0;      // type conversions and reinterprets
  int64_t loads = 0;      // reads of Funcs or inputs (own accumulator included)
  int64_t self_loads = 0; // of which reads of the stage itself (an update's accumulator)
  int64_t stores = 0;     // values written (1 per Tuple element)

  int64_t float_ops() const;  // sum of the f_* counters
  int64_t int_ops() const;    // sum of the i_* counters
};

// One definition of a stage: the pure one or an update.
struct Definition {
  int index = 0;                  // 0 = pure, k = update k-1
  std::vector<Loop> loops;        // pure loops used, then reduction loops (see top comment)
  int64_t points = 0;             // iterations: product of loop extents (0 if one is unknown)
  bool has_predicate = false;     // RDom::where: points is an upper bound
  std::vector<AccessDim> store;   // index written per stage dim (identity for pure definitions)
  std::vector<Access> self_accesses;  // reads of the stage itself (update accumulators)
  OpHistogram ops;                // per iteration
};

// One Func of the pipeline.
struct Stage {
  std::string name;               // Func name
  bool is_output = false;         // one of the outputs the view was built from
  bool is_rename = false;         // value is another Func's (or input's) value at the same args
  std::string rename_of;          // what it renames, when is_rename
  std::string copy_of;            // the one Func or input its only value loads, when that value is the load alone at any index (a rename, a transposed or shifted copy); "" otherwise
  bool is_extern = false;         // define_extern stage: no definitions are analysed
  std::string dtype;              // type of value 0 ("float32", "int64", "bool")
  int bytes = 0;                  // bytes per element of value 0
  int num_values = 1;             // Tuple size
  std::vector<Loop> dims;         // pure args (Halide order, innermost first) with estimates
  bool dims_estimated = true;     // every extent came from set_estimate (else from consumers)
  std::vector<Definition> definitions;  // pure definition then updates
  int64_t elements = 0;           // product of dims extents (size of one realization)
  int64_t points = 0;             // iterations of all definitions together
  std::vector<std::string> producers;  // stages and inputs it reads, by name
  std::vector<std::string> consumers;  // stages that read it, by name
};

// An input buffer of the pipeline.
struct InputTensor {
  std::string name;               // ImageParam or Buffer name
  bool is_param = true;           // ImageParam (else a Buffer baked into the pipeline)
  std::string wrapper;            // the ImageParam's implicit Func "<name>_im" folded into it ("" if none)
  std::string dtype;              // element type
  int bytes = 0;                  // bytes per element
  std::vector<Loop> dims;         // per dimension (Halide order, named "<name>.<k>"): estimates or consumers' union
  bool dims_estimated = true;     // every extent came from estimates or the buffer itself
  std::vector<int64_t> extent_constraints;  // per dimension: the ImageParam's constant extent constraint (a Buffer's extent), 0 = none
  std::vector<int64_t> stride_constraints;  // per dimension: its constant stride constraint in elements (a Buffer's stride), 0 = none
  int64_t elements = 0;           // product of extents
  std::vector<std::string> consumers;  // stages that read it, by name
};

struct PipelineView {
  std::vector<std::string> outputs;  // output stage names, in the order given
  std::vector<Stage> stages;         // realization order: producers first
  std::vector<InputTensor> inputs;   // by name
  std::vector<Edge> edges;           // by consumer (stage order), then producer name

  int stage_index(const std::string& name) const;          // -1 when absent
  const Stage* stage(const std::string& name) const;       // null when absent
  const InputTensor* input(const std::string& name) const;  // null when absent
  const Edge* edge(const std::string& producer, const std::string& consumer) const;  // null when absent
  std::vector<const Edge*> edges_into(const std::string& consumer) const;
  std::vector<const Edge*> edges_from(const std::string& producer) const;
  int64_t total_points() const;      // sum of stage points

  // Renames stages (old name -> new name) everywhere the view names them.
  void rename_stages(const std::map<std::string, std::string>& names);

  // Every field, deterministic (object keys sorted); indent < 0 is compact.
  std::string to_json(int indent = -1) const;
  // A few lines per stage: loops, points, ops, producers.
  std::string summary() const;
};

// Analyses the pipeline that computes `outputs` (every Func they reach, and its inputs).
PipelineView build_pipeline_view(const std::vector<Halide::Func>& outputs);

}  // namespace ts
