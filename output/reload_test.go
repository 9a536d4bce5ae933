// SPDX-License-Identifier: Apache-2.0

package output

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/schema"
)

func TestSetPolicyAppliesToTheNextPass(t *testing.T) {
	dir := t.TempDir()
	old, current := "threadcap_samples_2026-11-21T06Z.csv", "threadcap_samples_2026-11-21T11Z.csv"
	for _, name := range []string{old, current} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(schema.Header()), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, _ := testConfig(dir, time.Date(2026, 11, 21, 11, 30, 0, 0, time.UTC))
	w, err := New(cfg) // keeps everything, uncompressed
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.maintain(context.Background())
	if got := dirNames(t, dir); !reflect.DeepEqual(got, []string{old, current}) {
		t.Fatalf("before: %v", got)
	}

	if err := w.SetPolicy(Policy{Compress: "lz4"}); err == nil {
		t.Error("SetPolicy accepted compression lz4")
	}
	if err := w.SetPolicy(Policy{Compress: CompressGzip}); err != nil {
		t.Fatal(err)
	}
	w.maintain(context.Background())
	if got := dirNames(t, dir); !reflect.DeepEqual(got, []string{old + ".gz", current}) {
		t.Errorf("after turning gzip on: %v, want the closed hour compressed", got)
	}
	if err := w.SetPolicy(Policy{Compress: CompressGzip, MaxAge: 3 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	w.maintain(context.Background())
	if got := dirNames(t, dir); !reflect.DeepEqual(got, []string{current}) {
		t.Errorf("after a max age of 3h: %v, want only the current hour", got)
	}
}
