// SPDX-License-Identifier: Apache-2.0
// The "k8s" spdlog logger used by everything in k8s/.
//
// k8s/ must not depend on bridge/, which owns logging setup: the logger is looked up by name
// and, when the daemon has not registered one, created from the default logger's sinks so
// lines still go where the process sends its logs.
//
// Messages are `event key=value ...`. Never log tokens, keys, certificates, Authorization
// headers or kubeconfig contents.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace skb::k8s {

// Thread-safe. Never returns null.
std::shared_ptr<spdlog::logger> Logger();

}  // namespace skb::k8s
