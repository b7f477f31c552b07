// SPDX-License-Identifier: Apache-2.0
// Time as the bridge records it: Unix seconds (slurm::UnixTime) in annotations, admin
// comments and actions, whole or (the times a wait is counted from: a lent node's
// idle-since, a job's checkpoint signal) to the millisecond, converted
// to and from the core's Clock time points, and read back from user-editable text. Also how
// long a recorded time may lie in the future before it is garbage (kClockSkewAllowance),
// and when a grace counted from a whole-second stamp ends.
//
//   if (auto t = ParseUnix(text)) lent_at = FromUnix(*t);   // "1700000000"; else garbled
//   annotations[kLentAtAnnotation] = std::to_string(ToUnix(now));
//   annotations[kIdleSinceAnnotation] = FormatUnixMillis(now);  // "1700000000.250"
//   FormatSeconds(std::chrono::minutes(2)) == "120s"
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/clock.h"
#include "src/slurm/types.h"

namespace skb::ownership {

// No time the bridge records (node annotations, a job's preemption record) is in the future
// by more than the clock skew between two hosts. One that is, like one that does not parse,
// is garbled: read as "now" and written again. Kept as written it would never pass, and the
// node would stay lent, guarded or unpreempted for ever.
inline constexpr Clock::Duration kClockSkewAllowance = std::chrono::minutes(5);

// Unix seconds <-> the core's time points. ToUnix rounds down to the whole second; FromUnix
// clamps a time the clock cannot hold (beyond about the year 2262) to the last it can.
Clock::TimePoint FromUnix(slurm::UnixTime t);
slurm::UnixTime ToUnix(Clock::TimePoint t);
// Unix milliseconds <-> time points, for the records that keep them (a give's signal time,
// from which its victims' grace is counted exactly). Rounding and clamping as above.
Clock::TimePoint FromUnixMillis(int64_t ms);
int64_t ToUnixMillis(Clock::TimePoint t);
// Unix seconds as the bridge writes them in annotations ("1700000000"); nullopt for
// anything else (annotations are user-editable input).
std::optional<slurm::UnixTime> ParseUnix(std::string_view text);
// Unix seconds with or without a fraction ("1700000000", "1700000000.250"; digits beyond
// the millisecond are dropped), as a time point; nullopt for anything else. What the bridge
// reads its time annotations with: those it writes in whole seconds parse as before.
std::optional<Clock::TimePoint> ParseUnixTime(std::string_view text);
// "1700000000.250": `t` in Unix seconds to the millisecond (rounded down), for a time that
// ends a wait to the millisecond (a lent node's idle-since, from which its cool-down runs;
// a job's checkpoint signal, from which its grace runs).
std::string FormatUnixMillis(Clock::TimePoint t);
// "42s": a duration for messages.
std::string FormatSeconds(Clock::Duration d);
// "2026-11-27T14:05:00Z": a time for messages, to the whole second, UTC.
std::string FormatUtc(Clock::TimePoint t);

// When the grace of a job signalled at `signalled` ends: the one rule of the node lend and
// the device lane. A signal recorded to the millisecond (`exact`) ends its grace at
// `signalled + grace`. One recorded in whole Unix seconds (the records of 0.1.0, a
// seconds-only placeholder record) is the signal's second rounded down, so the grace is
// counted from the second after it: a job always gets at least its whole grace (up to a
// second more), never up to a second less, as it did when counted from the stamp.
Clock::TimePoint GraceEnds(Clock::TimePoint signalled, bool exact, Clock::Duration grace);

}  // namespace skb::ownership
