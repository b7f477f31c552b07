// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/preemption_record.h"

#include <algorithm>
#include <utility>

#include "src/base/strings.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership {
namespace {

// The bridge's preemption token in `admin_comment`: [begin, end) or npos.
std::pair<size_t, size_t> FindPreemptedToken(std::string_view comment) {
  size_t pos = 0;
  while ((pos = comment.find(kPreemptedToken, pos)) != std::string_view::npos) {
    if (pos == 0 || comment[pos - 1] == ' ') {
      size_t end = comment.find(' ', pos);
      return {pos, end == std::string_view::npos ? comment.size() : end};
    }
    pos += kPreemptedToken.size();
  }
  return {std::string_view::npos, std::string_view::npos};
}

}  // namespace

std::vector<slurm::UnixTime> PreemptionTimes(std::string_view admin_comment) {
  std::vector<slurm::UnixTime> out;
  auto [begin, end] = FindPreemptedToken(admin_comment);
  if (begin == std::string_view::npos) return out;
  std::string_view value =
      admin_comment.substr(begin + kPreemptedToken.size(), end - begin - kPreemptedToken.size());
  value = value.substr(0, value.find('@'));
  for (std::string_view t : StrSplit(value, ',', /*skip_empty=*/true)) {
    if (auto v = ParseUnix(t)) out.push_back(*v);
    if (out.size() > 1000) break;  // garbage guard: nobody is preempted this often
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RecordPreemption(std::string_view admin_comment, slurm::UnixTime at,
                             std::string_view preemptor, const LendingConfig& cfg) {
  std::vector<slurm::UnixTime> times = PreemptionTimes(admin_comment);
  if (std::find(times.begin(), times.end(), at) == times.end()) times.push_back(at);
  std::sort(times.begin(), times.end());
  const size_t keep = static_cast<size_t>(std::max<int64_t>(cfg.max_preemptions, 0)) + 1;
  if (times.size() > keep) times.erase(times.begin(), times.end() - static_cast<long>(keep));
  std::string token(kPreemptedToken);
  for (size_t i = 0; i < times.size(); ++i) StrAppend(&token, i ? "," : "", times[i]);
  std::string who(preemptor);
  std::replace_if(
      who.begin(), who.end(), [](char c) { return c == ' ' || c < 0x20; }, '_');
  StrAppend(&token, "@", who);

  std::string out(admin_comment);
  auto [begin, end] = FindPreemptedToken(out);
  if (begin != std::string::npos) {
    out.replace(begin, end - begin, token);
    return out;
  }
  if (!out.empty() && out.back() != ' ') out += ' ';
  out += token;
  return out;
}

int64_t PreemptionsInWindow(const slurm::JobView& job, const LendingConfig& cfg,
                            Clock::TimePoint now) {
  const slurm::UnixTime since = ToUnix(now - cfg.preemption_window);
  // A time after now (beyond the clock skew) is garbage, not a preemption that never ages.
  const slurm::UnixTime until = ToUnix(now + kClockSkewAllowance);
  int64_t n = 0;
  for (slurm::UnixTime t : PreemptionTimes(job.admin_comment)) {
    n += t >= since && t <= until ? 1 : 0;
  }
  return n;
}

}  // namespace skb::ownership
