// SPDX-License-Identifier: Apache-2.0
// Shared set-up of the tests that act on the real testbed through the ActionExecutor: real
// clients for the apiserver ($KUBECONFIG) and slurmctld ($SLURM_CONF), an Event recorder,
// and a Slurm node resumed and responding before the test starts.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "bridge/reconcile/action_executor.h"
#include "bridge/slurm/libslurm_client.h"
#include "k8s/api_event_recorder.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::bridge::testing {

class ActOnTestbedTest : public ::testing::Test {
 protected:
  // Connects everything and resumes `node`, then waits until Slurm shows it idle (another
  // test may have restarted slurmctld, after which nodes answer again only after a ping).
  void ConnectAndPrepare(const std::string& node, k8s::EventRecorderOptions event_options = {}) {
    ASSERT_TRUE(testbed::TestbedDir().ok()) << testbed::TestbedDir().status().message();
    const char* kubeconfig = std::getenv("KUBECONFIG");
    ASSERT_NE(kubeconfig, nullptr);
    auto cfg = k8s::LoadKubeconfig(kubeconfig, "");
    ASSERT_TRUE(cfg.ok()) << cfg.status();
    auto client = k8s::NewRestClient(*cfg);
    ASSERT_TRUE(client.ok()) << client.status();
    kube_ = std::move(*client);
    slurm_ = std::make_unique<slurm::LibSlurmClient>(slurm::LibSlurmClient::Options{});
    events_ = std::make_unique<k8s::ApiEventRecorder>(kube_.get(), event_options);
    events_->Start();
    exec_ = std::make_unique<ActionExecutor>(slurm_.get(), kube_.get(), events_.get(), &clock_);
    testbed::Shell(StrCat("scontrol update nodename=", node, " state=resume 2>/dev/null"));
    ASSERT_TRUE(testbed::WaitFor(
        [&] {
          return StripWhitespace(
                     testbed::Shell(StrCat("sinfo -h -N -n ", node, " -o '%T' | head -1")).out) ==
                 "idle";
        },
        std::chrono::seconds(60), std::chrono::milliseconds(500)))
        << node
        << " is not idle: " << testbed::Shell(StrCat("sinfo -h -N -n ", node, " -o '%T %E'")).out;
  }
  void StopEvents() {
    if (events_) events_->Stop();
  }

  k8s::SystemClock clock_;
  std::unique_ptr<k8s::KubeClient> kube_;
  std::unique_ptr<slurm::LibSlurmClient> slurm_;
  std::unique_ptr<k8s::ApiEventRecorder> events_;
  std::unique_ptr<ActionExecutor> exec_;
};

}  // namespace skb::bridge::testing
