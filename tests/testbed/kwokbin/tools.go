// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package tools pins kwok, which simulates the kubelets of the testbed's GPU nodes.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
