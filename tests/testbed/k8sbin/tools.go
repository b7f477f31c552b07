// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package tools pins the Kubernetes and etcd commands the testbed builds, so that
// `go mod tidy` keeps their dependencies in go.sum. Nothing here is compiled.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
