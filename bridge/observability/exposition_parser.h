// SPDX-License-Identifier: Apache-2.0
// A strict reader of the Prometheus text exposition format 0.0.4, for tests (unit, e2e)
// and tools that scrape the bridge's /metrics: it checks what a Prometheus server would
// reject (syntax, escaping, TYPE before samples, one TYPE per family, histogram shape) and
// returns the samples.
//
//   ASSIGN_OR_RETURN(Exposition e, ParseExposition(body));
//   double lent = e.Value("skb_gpus", {{"owner", "lending"}}).value_or(-1);
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace skb::observability {

struct Sample {
  std::string name;                           // including _bucket/_sum/_count
  std::map<std::string, std::string> labels;  // unescaped values
  double value = 0;
};

struct Exposition {
  std::vector<Sample> samples;               // in document order
  std::map<std::string, std::string> types;  // family name -> counter|gauge|histogram|...
  std::map<std::string, std::string> helps;  // family name -> unescaped HELP text

  // The value of the sample with exactly these labels, if present.
  std::optional<double> Value(std::string_view name,
                              const std::map<std::string, std::string>& labels = {}) const;
};

// InvalidArgument naming the line and the problem. Checks, besides syntax: metric and
// label names valid; label values correctly escaped; no duplicate label names in a sample;
// at most one HELP and TYPE per family, TYPE before the family's samples; samples of one
// family contiguous; no duplicate series; histogram buckets cumulative (non-decreasing)
// with a final le="+Inf" equal to _count.
StatusOr<Exposition> ParseExposition(std::string_view text);

}  // namespace skb::observability
