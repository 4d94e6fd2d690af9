// `tensorsched cache info|clear`: what the compiled-code cache holds (per build folder: this
// build's, older builds' that nothing will load again) and removing it.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "measure/workload_compiler.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

struct CacheArgs {
  std::string dir;     // --cache-dir
  bool stale = false;  // clear: only other builds' folders
  bool json = false;
};

struct FolderUse {
  int64_t files = 0, libraries = 0, bytes = 0;
};

FolderUse folder_use(const fs::path& dir) {
  FolderUse u;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    u.files++;
    u.libraries += it->path().extension() == ".so";
    u.bytes += static_cast<int64_t>(it->file_size(ec));
  }
  return u;
}

int info_command(const CacheArgs& a) {
  const fs::path root = code_cache_root(a.dir);
  const std::string current = code_cache_build_dir();
  nlohmann::json folders = nlohmann::json::array();
  if (!a.json) std::cout << fmt::format("code cache {} (this build: {})\n", root.string(), current);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory()) continue;
    const FolderUse u = folder_use(e.path());
    const bool mine = e.path().filename() == current;
    folders.push_back({{"folder", e.path().filename().string()}, {"this_build", mine}, {"files", u.files},
                       {"shared_objects", u.libraries}, {"bytes", u.bytes}});
    if (!a.json)
      std::cout << fmt::format("  {:<28} {:>6} shared objects {:>9.1f} MB  {}\n", e.path().filename().string(), u.libraries,
                               u.bytes / 1e6, mine ? "this build" : "stale: another build's code, never loaded again");
  }
  if (a.json) std::cout << nlohmann::json{{"root", root.string()}, {"this_build", current}, {"folders", folders}}.dump() << "\n";
  else if (folders.empty()) std::cout << "  (empty)\n";
  return 0;
}

int clear_command(const CacheArgs& a) {
  const fs::path root = code_cache_root(a.dir);
  const std::string current = code_cache_build_dir();
  int64_t bytes = 0, removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory() || (a.stale && e.path().filename() == current)) continue;
    bytes += folder_use(e.path()).bytes;
    fs::remove_all(e.path());
    removed++;
  }
  std::cout << fmt::format("{}: removed {} build folder(s), {:.1f} MB\n", root.string(), removed, bytes / 1e6);
  return 0;
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto args = std::make_shared<CacheArgs>();
  auto* cache = app.add_subcommand("cache", "The compiled-code cache: info, clear");
  cache->require_subcommand(1);
  auto* info = cache->add_subcommand("info", "Where the cache is and what each build folder holds");
  info->add_option("--cache-dir", args->dir, "Cache root (default $TENSORSCHED_CACHE_DIR or ~/.cache/tensorsched)");
  info->add_flag("--json", args->json, "One JSON object");
  on_command(info, [args] { return info_command(*args); });
  auto* clear = cache->add_subcommand("clear", "Remove compiled code (everything, or --stale: other builds' only)");
  clear->add_option("--cache-dir", args->dir, "Cache root (default $TENSORSCHED_CACHE_DIR or ~/.cache/tensorsched)");
  clear->add_flag("--stale", args->stale, "Only folders of other tensorsched builds");
  on_command(clear, [args] { return clear_command(*args); });
}

}  // namespace ts
