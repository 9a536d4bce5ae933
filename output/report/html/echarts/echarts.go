// SPDX-License-Identifier: Apache-2.0

// Package echarts is Apache ECharts, vendored at a pinned version (the Makefile's
// vendor-echarts fetches it from the npm registry and checks its sha256): the chart library
// the HTML report inlines, so that neither the build nor the page needs a network.
package echarts

import _ "embed"

// Script is dist/echarts.min.js of the pinned release.
//
//go:embed echarts.min.js
var Script string

// Version is the pinned release, as in the Makefile.
const Version = "6.1.0"
