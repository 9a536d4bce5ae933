// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
)

// TestServerAnswersScrapesWhileTheSamplerTicks: /metrics answers, and only it, while the
// sampler tells the metrics of ticks from its own goroutine (the race detector watches);
// a second server on the same address is refused with ErrListen; Close stops it.
func TestServerAnswersScrapesWhileTheSamplerTicks(t *testing.T) {
	srv, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := Listen(srv.Addr().String()); !errors.Is(err, ErrListen) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("a second Listen on %s: %v, want ErrListen saying the address is in use", srv.Addr(), err)
	}
	m := newTestMetrics(true, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	log := logrus.New()
	log.SetOutput(io.Discard)
	srv.Serve(reg, logrus.NewEntry(log))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.Unix(1_800_000_000, 0)
		for i := uint64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tick = tick.Add(time.Second) // a ranking every minute
			m.Rows(tick, []state.Sample{{Process: "p" + string(rune('a'+i%5)), StateTimeUs: [state.TimedStates]int64{state.OnCPU: 1000}}})
			m.Ticked(sampler.TickReport{Stats: sampler.Stats{Ticks: i}})
		}
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for range 20 {
		if code, body := get(Path); code != http.StatusOK || !strings.Contains(body, "threadcap_ticks_total ") {
			t.Fatalf("GET %s: %d\n%s", Path, code, body)
		}
	}
	close(stop)
	wg.Wait()
	if code, _ := get("/"); code != http.StatusNotFound {
		t.Errorf("GET /: %d, want 404: only %s is served", code, Path)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := http.Get("http://" + srv.Addr().String() + Path); err == nil {
		t.Error("the server still answers after Close")
	}
}
