// SPDX-License-Identifier: Apache-2.0

package timetravel

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/parquet"
)

// checkParquet converts a copy of the recording to Parquet, every hour of every kind, as
// output.format parquet leaves closed hours, and runs every view of `threadcap report` on
// both: the answers are the same, but for the files the JSON names.
func checkParquet(t *testing.T, rec *Recording) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dir, os.DirFS(rec.Dir)); err != nil {
		t.Fatal(err)
	}
	all, err := hourfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	converted := map[string]int{}
	for _, f := range all {
		if !f.Readable() {
			continue
		}
		if _, st, err := parquet.ConvertHour(context.Background(), dir, f, "recording", parquet.FileOptions{GID: -1}); err != nil || st.Malformed != 0 {
			t.Fatalf("converting %s: %v (%d malformed rows)", f.Path, err, st.Malformed)
		}
		if err := os.Remove(f.Path); err != nil {
			t.Fatal(err)
		}
		converted[f.Kind.String()]++
	}
	if converted["samples"] == 0 || converted["ticks"] == 0 || converted["spans"] == 0 {
		t.Fatalf("converted %v: the recording misses samples, ticks or spans", converted)
	}
	window := []string{"--from", rec.From.Format(time.RFC3339Nano), "--to", rec.To.Format(time.RFC3339Nano)}
	all2 := []string{"--from", rec.From.Add(-time.Hour).Format(time.RFC3339Nano), "--to", rec.To.Add(time.Hour).Format(time.RFC3339Nano)}
	for _, args := range [][]string{
		append([]string{"--by", "pid,process,state,syscall,span", "--top", "0"}, window...),
		append([]string{"--by", "process,state", "--format", "json"}, window...),
		append([]string{"--by", "state,wchan", "--format", "csv", "--top", "0"}, window...),
		append([]string{"--timeline", "second"}, window...),
		append([]string{"--timeline", "minute", "--format", "json"}, all2...),
		append([]string{"--folded"}, all2...),
		append([]string{"--latency"}, all2...),
		append([]string{"--latency", "--format", "json"}, all2...),
	} {
		fromCSV, fromParquet := runReport(t, rec.Bin, rec.Dir, args), runReport(t, rec.Bin, dir, args)
		if fromCSV != fromParquet {
			t.Errorf("report %s\nfrom CSV:\n%s\nfrom Parquet:\n%s", strings.Join(args, " "), fromCSV, fromParquet)
		} else {
			t.Logf("report %s: %d bytes, the same from both", strings.Join(args, " "), len(fromCSV))
		}
	}
}

// runReport runs `threadcap report` on dir; JSON loses its files, which name the format.
func runReport(t *testing.T, bin, dir string, args []string) string {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"report", "--dir", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("threadcap report %v: %v", args, err)
	}
	var j map[string]any
	if json.Unmarshal(out, &j) == nil {
		delete(j, "files")
		out, _ = json.MarshalIndent(j, "", "  ")
	}
	return string(out)
}
