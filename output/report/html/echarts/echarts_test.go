// SPDX-License-Identifier: Apache-2.0

package echarts

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// The embedded library is the one the Makefile's vendor-echarts checked and recorded.
func TestScriptIsTheVendoredRelease(t *testing.T) {
	sums, err := os.ReadFile("SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := strings.Cut(string(sums), " ")
	sum := sha256.Sum256([]byte(Script))
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("echarts.min.js has sha256 %s, SHA256SUMS says %s: run make vendor-echarts", got, want)
	}
	// Inlined in a <script>, it must not end the element early.
	if strings.Contains(strings.ToLower(Script), "</script") {
		t.Fatal("echarts.min.js holds </script")
	}
}
