// SPDX-License-Identifier: Apache-2.0
// Reading small local files (kubeconfig, certificates, service-account token) into memory.
#pragma once

#include <string>

#include "src/base/status.h"

namespace skb::k8s {

// Reads the whole file. Errors name `what` and the path, never the contents: NotFound when
// it does not exist, FailedPrecondition when it cannot be read (permissions, a directory),
// InvalidArgument when larger than `max_bytes` (these files are small; a huge one is a
// mistake, not something to load).
StatusOr<std::string> ReadSmallFile(const std::string& path, const std::string& what,
                                    size_t max_bytes = 4 << 20);

}  // namespace skb::k8s
