// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the Slurm integration and end-to-end tests: submit jobs with sbatch
// and always cancel them, read a job's state with squeue, run scripts/testbed.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::testbed {

// Cancels every job it was given when it goes out of scope (tests clean up after
// themselves even when an assertion fails).
class JobJanitor {
 public:
  ~JobJanitor() { CancelAll(); }
  void Add(const std::string& id) {
    if (!id.empty()) ids_.push_back(id);
  }
  void CancelAll() {
    if (ids_.empty()) return;
    std::vector<std::string> argv = {"scancel", "--quiet"};
    // scancel takes many ids at once; chunk to keep argv small.
    for (size_t i = 0; i < ids_.size(); i += 200) {
      std::vector<std::string> chunk = argv;
      for (size_t j = i; j < ids_.size() && j < i + 200; ++j) chunk.push_back(ids_[j]);
      RunCommand(chunk, std::chrono::seconds(60));
    }
    ids_.clear();
  }

 private:
  std::vector<std::string> ids_;
};

// sbatch --parsable ARGS...; returns the job id ("" on failure, with the output in *err).
inline std::string Sbatch(const std::vector<std::string>& args, JobJanitor* janitor,
                          std::string* err = nullptr, std::string* out = nullptr) {
  std::vector<std::string> argv = {"sbatch", "--parsable", "--output=/dev/null", "--chdir=/tmp"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunCommand(argv, std::chrono::seconds(60));
  if (err != nullptr) *err = r.err;
  if (out != nullptr) *out = r.out;
  if (r.exit_code != 0) return "";
  std::string id(StripWhitespace(r.out));
  if (auto semi = id.find(';'); semi != std::string::npos) id = id.substr(0, semi);
  janitor->Add(id);
  return id;
}

// squeue's state of a job ("PENDING", "RUNNING", ...; "" when unknown).
inline std::string JobState(const std::string& id) {
  CommandResult r =
      RunCommand({"squeue", "-h", "-j", id, "--states=all", "-o", "%T"}, std::chrono::seconds(30));
  return std::string(StripWhitespace(r.out));
}

inline CommandResult Testbed(const std::string& args) {
  return Shell(StrCat(skb::testbed::SourceDir(), "/scripts/testbed ", args),
               std::chrono::seconds(180));
}

}  // namespace skb::testbed
