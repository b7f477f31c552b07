// SPDX-License-Identifier: Apache-2.0
// Command etcd is the etcd server at the version k8s.io/kubernetes pins, built so the
// testbed does not depend on the distribution's etcd release.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
