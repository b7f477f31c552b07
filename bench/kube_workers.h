// SPDX-License-Identifier: Apache-2.0
// A pool of threads for a benchmark harness's own Kubernetes requests (creating and deleting
// thousands of objects), each thread with its own client: a client keeps only a few idle
// connections, so 32 threads sharing one would open a new TLS connection for most requests.
//
//   ASSIGN_OR_RETURN(KubeWorkers w, KubeWorkers::Make(32, [] { return AdminKubeClient(); }));
//   int64_t failed = w.Run(5000, [](k8s::KubeClient& kube, int i) { return Create(kube, i); });
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "k8s/kube_client.h"
#include "src/base/status.h"

namespace skb::bench {

class KubeWorkers {
 public:
  using NewClient = std::function<StatusOr<std::unique_ptr<k8s::KubeClient>>()>;

  static StatusOr<KubeWorkers> Make(int n, const NewClient& new_client) {
    KubeWorkers w;
    for (int i = 0; i < n; ++i) {
      StatusOr<std::unique_ptr<k8s::KubeClient>> kube = new_client();
      if (!kube.ok()) return kube.status();
      w.clients_.push_back(std::move(*kube));
    }
    return w;
  }

  // Runs fn(client, i) for i in [0, n) on all the workers at once. Returns the number of
  // failures (the first few are printed).
  int64_t Run(int n, const std::function<Status(k8s::KubeClient&, int)>& fn) {
    std::atomic<int> next{0};
    std::atomic<int64_t> failed{0};
    std::vector<std::thread> threads;
    for (auto& kube : clients_) {
      threads.emplace_back([&, client = kube.get()] {
        for (int i = next++; i < n; i = next++) {
          Status s = fn(*client, i);
          if (!s.ok() && failed++ < 5) std::fprintf(stderr, "  %d: %s\n", i, s.ToString().c_str());
        }
      });
    }
    for (auto& t : threads) t.join();
    return failed.load();
  }

 private:
  std::vector<std::unique_ptr<k8s::KubeClient>> clients_;
};

}  // namespace skb::bench
