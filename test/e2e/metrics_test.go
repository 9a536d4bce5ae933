// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// spinnerName is the process name of the metrics test's spinner: no other process has it.
const spinnerName = "tcmspinner"

// TestPrometheusScrapesActiveThreads runs the daemon with its endpoint on and a real
// Prometheus scraping it, as an operator would, and asks Prometheus what a dashboard
// would: the target is up, and a process that spins on a CPU of its own is one thread on
// CPU on average (the rate of its on-CPU thread-seconds), within 5%. The kernel's own count
// of the spinner's CPU time (schedstat) over the same window is the reference: on a
// machine whose other work takes the spinner's CPU from it, the rate must follow the
// kernel, and is then less than 1 by as much.
func TestPrometheusScrapesActiveThreads(t *testing.T) {
	privileged.Require(t)
	bin := filepath.Join(t.TempDir(), spinnerName)
	copyFile(t, "/bin/sh", bin)
	spinner := workload.Process(t, exec.Command(bin, "-c", "while :; do :; done"))
	// The daemon and Prometheus, started after, share the other CPU with this process.
	workload.Apart(t, spinner)

	target := fmt.Sprintf("127.0.0.1:%d", workload.FreePort(t))
	// Every process gets a label of its own at once: the choice of the busiest ones is
	// made a minute in (the package's tests check it), longer than this test needs.
	config := writeConfig(t, fmt.Sprintf("metrics:\n  listen: %q\n  top_processes: 1000\n", target))
	d := start(t, t.TempDir(), "--config", config, "--hz", "10")
	// A counter moves at each tick, and a scrape sees it as of the last one: a tick late
	// by a second at one end of the window and not the other is 2.5% of a 40 s window. On
	// a loaded machine the daemon's ticks are late unless it comes first.
	if err := unix.Setpriority(unix.PRIO_PROCESS, d.Cmd.Process.Pid, -20); err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, target)

	onCPU := fmt.Sprintf(`threadcap_thread_seconds_total{state="on_cpu",process=%q}`, spinnerName)
	waitFor(t, d, "the spinner's series in Prometheus", func() bool { return len(prom.query(t, onCPU, time.Now())) == 1 })
	// A 40 s window of scrapes a second: a scrape sees the counter up to a tick (0.1 s,
	// 0.25% of the window) late.
	const window = 40 * time.Second
	cpu0, _ := workload.Schedstat(t, spinner)
	from := time.Now()
	time.Sleep(window)
	cpu1, _ := workload.Schedstat(t, spinner)
	at := time.Now()
	kernel := float64(cpu1-cpu0) / float64(at.Sub(from).Nanoseconds())
	// The scrapes up to at, and one after: Prometheus answers for at only what it has.
	time.Sleep(2 * time.Second)

	if up := prom.query(t, `up{job="threadcap"}`, at); len(up) != 1 || up[0].Value != 1 {
		t.Errorf("up{job=\"threadcap\"} = %v, want one series, 1", up)
	}
	rate := fmt.Sprintf("rate(%s[%s])", onCPU, model(window))
	got := prom.query(t, rate, at)
	if len(got) != 1 {
		t.Fatalf("%s = %v, want one series", rate, got)
	}
	t.Logf("%s = %.4f; the kernel's count (schedstat) over the window: %.4f", rate, got[0].Value, kernel)
	if math.Abs(got[0].Value-kernel) > 0.05*kernel {
		t.Errorf("%s = %.4f, want the kernel's %.4f within 5%%", rate, got[0].Value, kernel)
	}
	switch {
	case kernel >= 0.95 && math.Abs(got[0].Value-1) > 0.05:
		t.Errorf("%s = %.4f, want 1 within 5%%: the spinner had its CPU (the kernel counts %.4f)", rate, got[0].Value, kernel)
	case kernel < 0.95:
		t.Logf("other work on this machine took %.1f%% of the spinner's CPU: 1 within 5%% is not expected", 100*(1-kernel))
	}
	// Its rows' times add up to their intervals: a single-threaded process is one thread
	// in all states together, whatever share of the CPU it got.
	all := fmt.Sprintf("sum(rate(threadcap_thread_seconds_total{process=%q}[%s]))", spinnerName, model(window))
	if got := prom.query(t, all, at); len(got) != 1 || math.Abs(got[0].Value-1) > 0.05 {
		t.Errorf("%s = %v, want 1 within 5%%", all, got)
	}
	t.Logf("a scrape, excerpt:\n%s", scrapeExcerpt(t, target))
	stop(t, d)
}

// TestMetricsListenMistakes: an address that does not parse, or a port another process
// holds, stops threadcap at start with exit code 2 and a message naming metrics.listen,
// before it writes anything.
func TestMetricsListenMistakes(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct {
		name, listen, says string
		root               bool // the port is opened after the capabilities are checked
	}{
		{"no port", "127.0.0.1", "is not an address", false},
		{"port not a number", "127.0.0.1:metrics", "is not an address", false},
		{"port in use", held.Addr().String(), "address already in use", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root {
				privileged.Require(t)
			}
			dir := filepath.Join(t.TempDir(), "data")
			config := writeConfig(t, fmt.Sprintf("metrics:\n  listen: %q\n", tc.listen))
			code, out := exitCode(t, exec.Command(binary, "run", "--config", config, "--dir", dir))
			if code != 2 {
				t.Errorf("exit code %d, want 2 (a config mistake)\n%s", code, out)
			}
			if !strings.Contains(out, "metrics.listen") || !strings.Contains(out, tc.says) {
				t.Errorf("output does not name metrics.listen and say %q:\n%s", tc.says, out)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s exists (%v): nothing should be written", dir, err)
			}
		})
	}
}

// model is d as PromQL writes a duration: 40s.
func model(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }

// writeConfig writes yaml to a config file and returns its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "threadcap.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// copyFile copies an executable to path, so that the process it runs has path's name.
func copyFile(t *testing.T, src, path string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// scrapeExcerpt is threadcap's own metrics in one scrape, with the activity of the spinner
// and of the processes without a label of their own.
func scrapeExcerpt(t *testing.T, target string) string {
	t.Helper()
	client := http.Client{Timeout: patience}
	resp, err := client.Get("http://" + target + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(body), "\n") {
		switch {
		case !strings.HasPrefix(line, "threadcap_"), strings.Contains(line, "_bucket{"):
		case strings.HasPrefix(line, "threadcap_thread_seconds_total{"):
			if strings.Contains(line, `"`+spinnerName+`"`) || strings.Contains(line, `"other"`) {
				keep = append(keep, line)
			}
		default:
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
