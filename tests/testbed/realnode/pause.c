// SPDX-License-Identifier: Apache-2.0
// The sandbox ("pause") process of the testbed's real node (scripts/lib/testbed/realnode.sh),
// built static into a one-file image: it holds the pod's namespaces, reaps the children it
// inherits and exits on SIGTERM or SIGINT, as Kubernetes' own pause does.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void Stop(int sig) { _exit(sig == SIGTERM || sig == SIGINT ? 0 : 2); }

static void Reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = Stop};
  struct sigaction reap = {.sa_handler = Reap, .sa_flags = SA_NOCLDSTOP};
  sigaction(SIGTERM, &stop, NULL);
  sigaction(SIGINT, &stop, NULL);
  sigaction(SIGCHLD, &reap, NULL);
  for (;;) pause();
}
