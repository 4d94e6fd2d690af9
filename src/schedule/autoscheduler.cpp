// Halide's autoschedulers as Schedule recipes: plugin search and loading, parameter checks,
// machine parameters, and the environment the Adams2019 plugin reads its parameters from.
#include "schedule/autoscheduler.h"
#include "schedule/default_schedule.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "graph/error.h"

namespace ts {

namespace fs = std::filesystem;

namespace {

constexpr const char* kAdams = "Adams2019";
constexpr uint64_t kDefaultCacheBytes = 16ull << 20;  // Halide's MachineParams::generic() value
constexpr float kDefaultBalance = 40;

// What a parameter value must be.
enum class Kind { Count, Bytes, Percent, Seed, Real, Flag, Path };

struct ParamSpec {
  const char* name;     // key in AutoschedulerRecipe::params
  const char* env;      // environment variable the Adams2019 plugin reads ("" = a MachineParams field)
  Kind kind;            // accepted values
  int64_t max = 0;      // Count: the largest accepted value
};

const std::vector<ParamSpec>& machine_param_specs() {
  static const std::vector<ParamSpec> specs{
      {"parallelism", "", Kind::Count, 1 << 16},
      {"last_level_cache_size", "", Kind::Bytes},
      {"balance", "", Kind::Real},
  };
  return specs;
}

const std::vector<ParamSpec>& adams_param_specs() {
  static const std::vector<ParamSpec> specs{
      {"beam_size", "HL_BEAM_SIZE", Kind::Count, 1 << 20},
      {"num_passes", "HL_NUM_PASSES", Kind::Count, 100},
      {"random_dropout", "HL_RANDOM_DROPOUT", Kind::Percent},
      {"random_dropout_seed", "HL_SEED", Kind::Seed},
      {"weights_path", "HL_WEIGHTS_DIR", Kind::Path},
      {"no_subtiling", "HL_NO_SUBTILING", Kind::Flag},
      {"memory_limit", "HL_AUTOSCHEDULE_MEMORY_LIMIT", Kind::Bytes},
  };
  return specs;
}

// Read by the Adams2019 plugin but not recipe parameters: unset during a run (interactive
// search, files written as a side effect, random weights).
const char* const kAdamsUnsetEnv[] = {"HL_CYOS", "HL_SCHEDULE_FILE", "HL_FEATURE_FILE", "HL_RANDOMIZE_WEIGHTS"};

std::vector<ParamSpec> param_specs(const std::string& name) {
  std::vector<ParamSpec> specs = machine_param_specs();
  if (name == kAdams) specs.insert(specs.end(), adams_param_specs().begin(), adams_param_specs().end());
  return specs;
}

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

std::optional<std::string> check_value(const ParamSpec& p, const std::string& v) {
  const std::optional<int64_t> i = parse_int(v);
  auto bad = [&](const std::string& want) {
    return fmt::format("parameter '{}' is '{}', not {}", p.name, v, want);
  };
  switch (p.kind) {
    case Kind::Count:
      if (!i || *i < 1 || *i > p.max) return bad(fmt::format("an integer in [1, {}]", p.max));
      break;
    case Kind::Bytes:
      if (!i || *i < 1) return bad("a positive number of bytes");
      break;
    case Kind::Percent:
      if (!i || *i < 0 || *i > 100) return bad("an integer percentage in [0, 100]");
      break;
    case Kind::Seed:
      if (!i || *i < INT_MIN || *i > INT_MAX) return bad("a 32-bit integer");
      break;
    case Kind::Real: {
      char* end = nullptr;
      const double d = v.empty() ? 0 : std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !std::isfinite(d) || d <= 0) return bad("a positive number");
      break;
    }
    case Kind::Flag:
      if (v != "0" && v != "1") return bad("0 or 1");
      break;
    case Kind::Path:
      if (v.empty() || !fs::exists(v)) return fmt::format("parameter '{}': no file or directory '{}'", p.name, v);
      break;
  }
  return std::nullopt;
}

// Directory of the libHalide this process uses (where its plugins usually are).
std::string halide_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&Halide::load_plugin), &info) == 0 || !info.dli_fname) return "";
  std::error_code ec;
  const fs::path lib = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path(info.dli_fname).parent_path().string() : lib.parent_path().string();
}

std::string plugin_file_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return "libautoschedule_" + lower + ".so";
}

// The size of the largest (last-level) cache of CPU 0, from sysfs; 0 when unknown.
uint64_t last_level_cache_bytes() {
  int best_level = -1;
  uint64_t best = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    if (e.path().filename().string().rfind("index", 0) != 0) continue;
    int level = -1;
    std::string size;
    std::ifstream(e.path() / "level") >> level;
    std::ifstream(e.path() / "size") >> size;
    if (size.empty() || !std::isdigit(static_cast<unsigned char>(size[0]))) continue;
    uint64_t bytes = std::strtoull(size.c_str(), nullptr, 10);
    switch (size.back()) {
      case 'K': bytes <<= 10; break;
      case 'M': bytes <<= 20; break;
      case 'G': bytes <<= 30; break;
      default: break;
    }
    if (level > best_level || (level == best_level && bytes > best)) {
      best_level = level;
      best = bytes;
    }
  }
  return best;
}

// Sets or unsets environment variables, restoring their old values when destroyed.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  void set(const std::string& name, const std::optional<std::string>& value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
      else unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;  // (name, value before) in set order
};

// Values the Adams2019 plugin reads once per process, as it interprets them.
struct AdamsProcessValues {
  int64_t random_dropout = 100;  // HL_RANDOM_DROPOUT (100 = no dropout)
  bool no_subtiling = false;     // HL_NO_SUBTILING == "1"
  bool operator==(const AdamsProcessValues&) const = default;
};

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string as_identifier(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!is_ident_char(c)) c = '_';
  return s;
}

// The schedule source with each Func named as in its first lowering: Halide names a reused
// name "f$N", which the autoschedulers print as "f_N".
std::string without_unique_suffixes(std::string source, const std::vector<Halide::Func>& outputs) {
  std::map<std::string, std::string> rename;  // printed name -> name without "$N"
  auto add = [&](const std::string& n) {
    const size_t p = n.rfind('$');
    if (p == std::string::npos || p + 1 == n.size()) return;
    if (!std::all_of(n.begin() + p + 1, n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) return;
    rename[as_identifier(n)] = as_identifier(n.substr(0, p));
  };
  for (const auto& o : outputs) {
    add(o.name());
    for (const auto& [name, fn] : Halide::Internal::find_transitive_calls(o.function())) add(name);
  }
  if (rename.empty()) return source;
  std::string out;
  for (size_t i = 0; i < source.size();) {
    if (!is_ident_char(source[i])) {
      out += source[i++];
      continue;
    }
    size_t j = i;
    while (j < source.size() && is_ident_char(source[j])) j++;
    const std::string word = source.substr(i, j - i);
    auto it = rename.find(word);
    out += it == rename.end() ? word : it->second;
    i = j;
  }
  return out;
}

std::mutex g_run_mutex;                                  // one autoscheduler run at a time (process-wide environment)
std::map<std::string, std::string> g_loaded;             // autoscheduler name -> plugin path loaded
std::optional<AdamsProcessValues> g_adams_process_values;  // fixed by the first Adams2019 run

}  // namespace

const std::vector<std::string>& autoscheduler_names() {
  static const std::vector<std::string> names{"Adams2019", "Li2018", "Mullapudi2016"};
  return names;
}

std::vector<std::string> autoscheduler_plugin_dirs() {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (!d.empty() && std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  if (const char* env = std::getenv("TENSORSCHED_HALIDE_PLUGIN_DIR")) {
    std::string list = env;
    for (size_t start = 0; start <= list.size();) {
      const size_t colon = std::min(list.find(':', start), list.size());
      add(list.substr(start, colon - start));
      start = colon + 1;
    }
  }
  const std::string lib = halide_library_dir();
  if (!lib.empty()) {
    add(lib + "/halide14");
    add(lib);
  }
  for (const char* d : {"/usr/lib/x86_64-linux-gnu/halide14", "/usr/lib/aarch64-linux-gnu/halide14", "/usr/lib/halide14",
                        "/usr/local/lib/halide14", "/usr/local/lib", "/usr/lib"})
    add(d);
  return dirs;
}

std::string find_autoscheduler_plugin(const std::string& name) {
  const std::string file = plugin_file_name(name);
  for (const auto& d : autoscheduler_plugin_dirs()) {
    std::error_code ec;
    const fs::path p = fs::path(d) / file;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

std::optional<std::string> check_recipe(const AutoschedulerRecipe& recipe) {
  if (recipe.name == kDefaultRecipeName) return check_default_params(recipe.params);
  const auto& names = autoscheduler_names();
  if (std::find(names.begin(), names.end(), recipe.name) == names.end())
    return fmt::format("unknown autoscheduler '{}' (known: Adams2019, Li2018, Mullapudi2016)", recipe.name);
  const std::vector<ParamSpec> specs = param_specs(recipe.name);
  for (const auto& [key, value] : recipe.params) {
    auto it = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& p) { return key == p.name; });
    if (it == specs.end()) {
      std::string known;
      for (const auto& p : specs) known += fmt::format("{}{}", known.empty() ? "" : ", ", p.name);
      return fmt::format("{} has no parameter '{}' (its parameters: {})", recipe.name, key, known);
    }
    if (auto why = check_value(*it, value)) return fmt::format("{}: {}", recipe.name, *why);
  }
  if (find_autoscheduler_plugin(recipe.name).empty()) {
    std::string dirs;
    for (const auto& d : autoscheduler_plugin_dirs()) dirs += fmt::format("{}{}", dirs.empty() ? "" : ", ", d);
    return fmt::format("{}: plugin {} not found in {} (set TENSORSCHED_HALIDE_PLUGIN_DIR, or install libhalide14-0-dev)",
                       recipe.name, plugin_file_name(recipe.name), dirs);
  }
  return std::nullopt;
}

Halide::MachineParams recipe_machine_params(const AutoschedulerRecipe& recipe) {
  auto param = [&](const char* key) -> const std::string* {
    auto it = recipe.params.find(key);
    return it == recipe.params.end() ? nullptr : &it->second;
  };
  int parallelism = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (const std::string* v = param("parallelism")) parallelism = static_cast<int>(std::strtol(v->c_str(), nullptr, 10));
  uint64_t cache = last_level_cache_bytes();
  if (cache == 0) cache = kDefaultCacheBytes;
  if (const std::string* v = param("last_level_cache_size")) cache = std::strtoull(v->c_str(), nullptr, 10);
  float balance = kDefaultBalance;
  if (const std::string* v = param("balance")) balance = std::strtof(v->c_str(), nullptr);
  return Halide::MachineParams(parallelism, cache, balance);
}

std::string run_autoscheduler(const AutoschedulerRecipe& recipe, const std::vector<Halide::Func>& outputs,
                              const Halide::Target& target) {
  if (auto why = check_recipe(recipe)) throw Error("autoscheduler recipe: " + *why);
  if (recipe.name == kDefaultRecipeName) {
    apply_default_variant(outputs, target, DefaultKnobs::from_params(recipe.params));
    return "// tensorsched's default schedule (schedule/default_schedule.h)\n";
  }
  std::lock_guard<std::mutex> lock(g_run_mutex);
  auto halide_message = [](const Halide::Error& e) {
    std::string m = e.what();
    std::replace(m.begin(), m.end(), '\n', ' ');
    return m;
  };

  // Loaded once: a plugin registers its autoscheduler when loaded, and Halide rejects a
  // second registration of the same name.
  if (!g_loaded.count(recipe.name)) {
    const std::string path = find_autoscheduler_plugin(recipe.name);
    try {
      Halide::load_plugin(path);
    } catch (const Halide::Error& e) {
      throw Error(fmt::format("autoscheduler {}: cannot load plugin {}: {}", recipe.name, path, halide_message(e)));
    }
    g_loaded[recipe.name] = path;
  }

  ScopedEnv env;
  if (recipe.name == kAdams) {
    AdamsProcessValues wanted;
    auto it = recipe.params.find("random_dropout");
    if (it != recipe.params.end()) wanted.random_dropout = *parse_int(it->second);
    it = recipe.params.find("no_subtiling");
    if (it != recipe.params.end()) wanted.no_subtiling = it->second == "1";
    if (!g_adams_process_values) {
      g_adams_process_values = wanted;
    } else if (!(*g_adams_process_values == wanted)) {
      throw Error(fmt::format(
          "autoscheduler Adams2019: this process already ran it with random_dropout={} no_subtiling={}, which its plugin "
          "reads once per process; random_dropout={} no_subtiling={} needs a fresh process",
          g_adams_process_values->random_dropout, g_adams_process_values->no_subtiling ? 1 : 0, wanted.random_dropout,
          wanted.no_subtiling ? 1 : 0));
    }
    for (const auto& p : adams_param_specs()) {
      auto v = recipe.params.find(p.name);
      std::optional<std::string> value;
      if (v != recipe.params.end()) value = v->second;
      else if (p.kind == Kind::Seed) value = "0";  // unset, the plugin seeds from the time
      env.set(p.env, value);
    }
    for (const char* name : kAdamsUnsetEnv) env.set(name, std::nullopt);
  }

  try {
    Halide::Pipeline pipeline(outputs);
    return without_unique_suffixes(pipeline.auto_schedule(recipe.name, target, recipe_machine_params(recipe)).schedule_source,
                                   outputs);
  } catch (const Halide::Error& e) {
    throw Error(fmt::format("autoscheduler {}: {}", recipe.name, halide_message(e)));
  }
}

}  // namespace ts
