// The code cache directory (measure/workload_compiler): private to its user, and cleared of the
// temporary files of processes that died while compiling or linking into it.
#include "measure/workload_compiler.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <filesystem>
#include <fstream>

#include "graph/error.h"
#include "support/onnx_builder.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

// Code runs on this CPU: no AVX512-FP16 instruction (vmovw) where the CPU has none, whatever
// Halide's host detection names; every other feature as Halide detects it.
TEST(CodeCache, HostCodeTargetHasOnlyWhatTheCpuHas) {
  using T = Halide::Target;
  const T t = host_code_target();
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool fp16 = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 23)) != 0;
  if (!fp16) EXPECT_FALSE(t.has_feature(T::AVX512_SapphireRapids)) << t.to_string();
#endif
  EXPECT_EQ(t.without_feature(T::AVX512_SapphireRapids), Halide::get_host_target().without_feature(T::AVX512_SapphireRapids));
  EXPECT_EQ(CodeCache::open_default(t, (test::temp_dir() / "target_cache").string()).target, t);
}

TEST(CodeCache, ANewRootIsPrivate) {
  const fs::path root = test::temp_dir() / "cache";
  CodeCache::open_default(host_code_target(), root.string());
  struct stat st {};
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(CodeCache, ARootOthersCanWriteIsRefused) {
  const fs::path root = test::temp_dir() / "shared";
  fs::create_directories(root);
  fs::permissions(root, fs::perms::all, fs::perm_options::replace);  // 0777
  EXPECT_TRUE(test::throws_naming<Error>([&] { CodeCache::open_default(host_code_target(), root.string()); },
                                         {"writable by group or others"}));
}

TEST(CodeCache, TemporaryFilesOfDeadProcessesAreRemoved) {
  const fs::path root = test::temp_dir() / "cache";
  CodeCache c = CodeCache::open_default(host_code_target(), root.string());
  const pid_t child = fork();  // a process id that is certainly gone once reaped
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const fs::path dead = fs::path(c.dir) / ("ts_a_b.so.tmp" + std::to_string(child));
  const fs::path dead_obj = fs::path(c.dir) / ("ts_a_b.o.tmp" + std::to_string(child) + ".o");
  const fs::path alive = fs::path(c.dir) / ("ts_c_d.so.tmp" + std::to_string(getpid()));
  const fs::path entry = fs::path(c.dir) / "ts_e_f.so";
  for (const auto& p : {dead, dead_obj, alive, entry}) std::ofstream(p) << "x";
  CodeCache::open_default(host_code_target(), root.string());
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(dead_obj));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(entry));
}

}  // namespace
}  // namespace ts
