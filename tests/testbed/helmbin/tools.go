// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package tools pins helm, used to lint, render and apply the chart in helm/.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
