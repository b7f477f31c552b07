// SPDX-License-Identifier: Apache-2.0
// For tests: a field that several kinds of action share, read whatever the kind (a test
// that checks the pod of "the second action" need not spell its kind out; the kinds are
// checked by the test on their own). A kind without the field throws std::logic_error,
// which gtest reports as a failure. Fields of one kind only: Action::As<Kind>().
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "src/plan/action.h"

namespace skb::plan::testing {

[[noreturn]] inline void NoField(const Action& a, const char* field) {
  throw std::logic_error(std::string(a.Kind()) + " has no field " + field);
}

// RequeueSlurmJobs, SignalSlurmJobs, PreemptSlurmJobs.
inline const std::vector<uint32_t>& JobIdsOf(const Action& a) {
  return std::visit(
      [&](const auto& o) -> const std::vector<uint32_t>& {
        if constexpr (requires { o.job_ids; }) {
          return o.job_ids;
        } else {
          NoField(a, "job_ids");
        }
      },
      a.op);
}

// The pod kinds: DeleteReservationPod, PatchPodAnnotations, ReleaseReservationPod,
// RestoreFinalizer, EvictPod.
inline const PodRef& PodOf(const Action& a) {
  return std::visit(
      [&](const auto& o) -> const PodRef& {
        if constexpr (requires { o.pod; }) {
          return o.pod;
        } else {
          NoField(a, "pod");
        }
      },
      a.op);
}

// PatchPodAnnotations, PatchNodeAnnotations.
inline const AnnotationPatch& AnnotationsOf(const Action& a) {
  return std::visit(
      [&](const auto& o) -> const AnnotationPatch& {
        if constexpr (requires { o.annotations; }) {
          return o.annotations;
        } else {
          NoField(a, "annotations");
        }
      },
      a.op);
}

// SetNodeTaint, RemoveNodeTaint.
inline const TaintSpec& TaintOf(const Action& a) {
  return std::visit(
      [&](const auto& o) -> const TaintSpec& {
        if constexpr (requires { o.taint; }) {
          return o.taint;
        } else {
          NoField(a, "taint");
        }
      },
      a.op);
}

}  // namespace skb::plan::testing
