#pragma once
// Halide 14's autoschedulers (Adams2019, Li2018, Mullapudi2016: the plugins Debian ships as
// libautoschedule_<name>.so) run from an AutoschedulerRecipe, so they serve as baseline search
// policies whose schedules are stored and replayed like any other Schedule.
//
// Parameters (AutoschedulerRecipe::params, all strings):
//  - every autoscheduler, as Halide::MachineParams:
//      parallelism            cores to target (default: this machine's hardware threads)
//      last_level_cache_size  bytes (default: the largest CPU cache sysfs reports, else 16 MiB)
//      balance                cost of a load relative to an arithmetic op (default 40)
//  - Adams2019 only, through the environment variables its Halide 14 plugin reads (set or
//    unset from the recipe around the call, then restored, so the caller's environment never
//    leaks into a replay):
//      beam_size            HL_BEAM_SIZE                  beam width (plugin default 32; 1 = greedy)
//      num_passes           HL_NUM_PASSES                 coarse-to-fine passes (default 5, 1 when greedy)
//      random_dropout       HL_RANDOM_DROPOUT             percent chance of never dropping a state (default 100)
//      random_dropout_seed  HL_SEED                       seed of the dropout (default 0; the plugin would use the time)
//      weights_path         HL_WEIGHTS_DIR                cost-model weights dir or .weights file (default: built in)
//      no_subtiling         HL_NO_SUBTILING               "1" limits the search to Mullapudi's space
//      memory_limit         HL_AUTOSCHEDULE_MEMORY_LIMIT  bytes a schedule may allocate
// The plugin also reads HL_CYOS (interactive), HL_SCHEDULE_FILE, HL_FEATURE_FILE and
// HL_RANDOMIZE_WEIGHTS; they are unset during the call.
//
// Process-wide state in the Adams2019 plugin: it reads HL_RANDOM_DROPOUT and HL_NO_SUBTILING
// once per process (function-local statics), on its first run. A later recipe with another
// random_dropout or no_subtiling would silently run with the first values, so it is rejected
// with an Error; run it in a fresh process (e.g. a measurement worker). Runs are serialized
// (the environment is process-wide): do not read HL_* variables from other threads meanwhile.
#include <Halide.h>

#include <optional>
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace ts {

// The recipe that records made before the default rule emitted Schedule data hold for the rule
// (its parameters the knobs, DefaultKnobs): read, and applied as the rule's data with those knobs
// (rule_knobs, default_schedule.h); tensorsched no longer writes it.
inline constexpr const char* kDefaultRecipeName = "TensorschedDefault";

// The autoschedulers a recipe can name (besides kDefaultRecipeName).
const std::vector<std::string>& autoscheduler_names();

// Directories searched for libautoschedule_<name>.so, in order: $TENSORSCHED_HALIDE_PLUGIN_DIR
// (a ':'-separated list), the directory of libHalide and its halide14/ subdirectory, then the
// usual Debian and /usr/local library directories.
std::vector<std::string> autoscheduler_plugin_dirs();

// Path of the plugin that registers autoscheduler `name`, or "" when none is found.
std::string find_autoscheduler_plugin(const std::string& name);

// Why the recipe cannot run (unknown name, unknown or malformed parameter, plugin not found),
// or nullopt when it can.
std::optional<std::string> check_recipe(const AutoschedulerRecipe& recipe);

// The machine parameters the recipe runs with (its own or this machine's defaults).
Halide::MachineParams recipe_machine_params(const AutoschedulerRecipe& recipe);

// Loads the plugin (once per process) and runs the autoscheduler on the pipeline of `outputs`
// for `target`; it schedules the Funcs themselves. Returns the Halide C++ schedule source it
// printed, with Funcs named without the "$N" of a reused name (as "f", not "f_N"), so one
// recipe prints the same source on every lowering. Throws Error naming the autoscheduler and the reason (Halide's message included).
std::string run_autoscheduler(const AutoschedulerRecipe& recipe, const std::vector<Halide::Func>& outputs,
                              const Halide::Target& target);

}  // namespace ts
