// SPDX-License-Identifier: Apache-2.0
// The main() of every test that runs against a testbed (skb_add_testbed_test in
// cmake/SkbTesting.cmake). Before any test runs, the process claims one testbed for its whole
// life: an exclusive flock on the testbed's `test.lock`, released by the kernel when the
// process ends however it ends. Two test processes never drive one testbed at once, whether
// they come from one `ctest -j` or from two ctest runs side by side (the normal and the
// sanitizer build), which is what CTest's RESOURCE_LOCK did within one ctest run only.
//
// SKB_TESTBED_POOL (a space-separated list of testbed state directories, as scripts/test
// sets it) lets the process take whichever testbed of the pool is free, and then points its
// environment (KUBECONFIG, SLURM_CONF, SKB_TESTBED_DIR, ...) at that testbed from the `env`
// file `scripts/testbed up` writes into its directory. Without a pool the process claims the
// testbed of SKB_TESTBED_DIR, waiting for it if another test holds it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<std::string> PoolDirs() {
  std::vector<std::string> dirs;
  if (const char* pool = std::getenv("SKB_TESTBED_POOL"); pool != nullptr) {
    std::istringstream in(pool);
    for (std::string d; in >> d;) dirs.push_back(d);
  }
  return dirs;
}

// Takes `export NAME='VALUE'` lines (what `scripts/testbed env` prints) into the environment;
// PATH is left as the caller's (every testbed of one Slurm release has the same binaries).
bool LoadEnv(const std::string& file) {
  std::ifstream in(file);
  if (!in) return false;
  int loaded = 0;
  for (std::string line; std::getline(in, line);) {
    const std::string prefix = "export ";
    if (line.rfind(prefix, 0) != 0) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = line.substr(prefix.size(), eq - prefix.size());
    std::string value = line.substr(eq + 1);
    if (name == "PATH") continue;
    if (value.size() < 2 || value.front() != '\'' || value.back() != '\'') continue;
    value = value.substr(1, value.size() - 2);
    setenv(name.c_str(), value.c_str(), 1);
    ++loaded;
  }
  return loaded > 0;
}

// Returns the directory claimed, or "" when there is no testbed to claim (the tests then say
// themselves what is missing). Blocks until one is free.
std::string ClaimTestbed(bool& from_pool) {
  std::vector<std::string> dirs = PoolDirs();
  from_pool = !dirs.empty();
  if (!from_pool) {
    const char* dir = std::getenv("SKB_TESTBED_DIR");
    if (dir == nullptr || *dir == '\0') return "";
    dirs.push_back(dir);
  }
  std::vector<int> fds;
  for (const auto& d : dirs) {
    const std::string lock = d + "/test.lock";
    const int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
      std::fprintf(stderr, "[testbed] cannot open %s: is the testbed up?\n", lock.c_str());
      std::exit(1);
    }
    fds.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  bool said = false;
  for (;;) {
    for (size_t i = 0; i < dirs.size(); ++i) {
      if (flock(fds[i], LOCK_EX | LOCK_NB) == 0) {
        for (size_t j = 0; j < fds.size(); ++j) {
          if (j != i) close(fds[j]);
        }
        // fds[i] stays open: the claim lasts as long as this process.
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "[testbed] %s (claimed after %.1f s)\n", dirs[i].c_str(), waited);
        return dirs[i];
      }
    }
    if (!said) {
      std::fprintf(stderr,
                   "[testbed] every testbed of the pool is in use by another test: waiting\n");
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  // ctest's discovery lists the tests: no testbed is needed for that.
  if (!GTEST_FLAG_GET(list_tests)) {
    bool from_pool = false;
    const std::string dir = ClaimTestbed(from_pool);
    if (from_pool && !LoadEnv(dir + "/env")) {
      std::fprintf(stderr, "[testbed] %s/env is missing or empty: is that testbed up?\n",
                   dir.c_str());
      return 1;
    }
  }
  return RUN_ALL_TESTS();
}
