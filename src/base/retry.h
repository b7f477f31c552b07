// SPDX-License-Identifier: Apache-2.0
// The one retry rule of the daemon: which errors are retried with back-off and which are
// terminal until the state changes. The reconcile loop, the executor's Warning Events and
// the action metrics all ask IsRetryable, so they cannot disagree.
#pragma once

#include "src/base/status.h"

namespace skb {

// Unavailable (a service down or busy), Aborted (the state moved: plan again) and
// DeadlineExceeded (a client timeout, an apiserver 504) are retried with back-off; every
// other error is terminal until the state changes (a Warning Event says why).
inline bool IsRetryable(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kAborted ||
         s.code() == StatusCode::kDeadlineExceeded;
}

}  // namespace skb
