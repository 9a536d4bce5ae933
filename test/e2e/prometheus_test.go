// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/workload"
)

// prometheusHint is what to do when Prometheus is missing.
const prometheusHint = "Prometheus is not installed (no prometheus on the PATH): run `sudo make install-prometheus`"

// prometheus is a throwaway Prometheus server: its own config and data in a temp dir,
// listening on its own port of 127.0.0.1, scraping one target.
type prometheus struct {
	addr string
}

// startPrometheus runs Debian's Prometheus scraping target (host:port) every second. It is
// killed when the test ends, whether it passed or not, and its log shown if it failed.
func startPrometheus(t *testing.T, target string) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal(prometheusHint)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: threadcap
    static_configs:
      - targets: [%q]
`, target)
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{addr: "127.0.0.1:" + strconv.Itoa(workload.FreePort(t))}
	log := &daemontest.SyncBuffer{}
	cmd := exec.Command(bin, "--config.file", configPath, "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", p.addr, "--log.level", "warn")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus's log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(patience)
	for {
		resp, err := http.Get("http://" + p.addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after %v: %v\n%s", patience, err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sample is one series of an instant query's answer.
type sample struct {
	Labels map[string]string
	Value  float64
}

// query asks Prometheus's HTTP API the PromQL expr, evaluated at at.
func (p *prometheus) query(t *testing.T, expr string, at time.Time) []sample {
	t.Helper()
	resp, err := http.PostForm("http://"+p.addr+"/api/v1/query", url.Values{
		"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status string
		Error  string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]any // the time, and the value as a string
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	if answer.Status != "success" || answer.Data.ResultType != "vector" {
		t.Fatalf("query %s: status %s, result %s: %s", expr, answer.Status, answer.Data.ResultType, answer.Error)
	}
	var out []sample
	for _, r := range answer.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("query %s: value %v: %v", expr, r.Value[1], err)
		}
		out = append(out, sample{Labels: r.Metric, Value: v})
	}
	return out
}
