// SPDX-License-Identifier: Apache-2.0

package html

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/pgtest"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/timetravel"
)

// recordPostgres runs the daemon, with the postgresql spans preset and kernel stacks of D
// states, over a real PostgreSQL under pgbench (commits that wait for the WAL to reach the
// disk), a long pg_sleep and a query that computes, and returns the recording's directory
// and the window of the load.
func recordPostgres(t *testing.T) (rec *timetravel.Recording, from, to time.Time) {
	t.Helper()
	privileged.Require(t)
	chromium(t)
	tmp := t.TempDir()
	pgBin := pgtest.Private(t)
	pg := pgtest.StartIn(t, pgBin)
	if out, err := pg.Pgbench("-i", "-q", "-s", "4").CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	rec = &timetravel.Recording{Bin: timetravel.Build(t), Dir: filepath.Join(tmp, "data")}
	cfg := filepath.Join(tmp, "threadcap.yaml")
	yaml := fmt.Sprintf("dir: %s\nstacks:\n  kernel: off-cpu\nspans:\n  - preset: postgresql\n    binary: %s\n",
		rec.Dir, filepath.Join(pgBin, "postgres"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := daemontest.Start(t, rec.Bin, time.Minute, "--config", cfg, "--hz", "10", "--log-level", "warn")

	from = time.Now().Truncate(time.Second)
	var wg sync.WaitGroup
	run := func(delay time.Duration, cmd *exec.Cmd) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(delay)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%v: %v\n%s", cmd.Args, err, out)
			}
		}()
	}
	run(0, pg.Pgbench("-n", "-c", "6", "-j", "2", "-T", "20"))
	run(4*time.Second, pg.Psql("SELECT pg_sleep(6)"))
	run(10*time.Second, pg.Psql("SELECT count(*) FROM generate_series(1, 6000000) a, generate_series(1, 1) b"))
	run(12*time.Second, pg.Psql("SELECT count(*) FROM pgbench_accounts a JOIN pgbench_accounts b USING (aid)"))
	wg.Wait()
	to = time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(300 * time.Millisecond)
	daemon.Stop(t)
	return rec, from, to
}

// The page over PostgreSQL under load shows report's numbers, whole and narrowed; the
// README's picture is this page (make screenshot sets THREADCAP_SCREENSHOT).
func TestPageOverPostgres(t *testing.T) {
	rec, start, end := recordPostgres(t)
	from, to := start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano)
	path := filepath.Join(t.TempDir(), "page.html")
	if out, err := exec.Command(rec.Bin, "report", "--dir", rec.Dir, "--from", from, "--to", to, "--html", path).CombinedOutput(); err != nil {
		t.Fatalf("threadcap report --html: %v\n%s", err, out)
	}
	tb := open(t, path)
	var ms float64
	tb.eval(`threadcapPage.loadMs()`, &ms)
	t.Logf("the page (%d bytes) was drawn %.0f ms after it began loading", fileSize(t, path), ms)
	sameNumbers(t, tb, reportJSON(t, rec, from, to, "--by", "state"), "state", "over the whole window")
	img, png := tb.screenshot()
	for _, panel := range []string{"#chart", "#top", "#flame", "#heatmaps", "#threads"} {
		if !drawn(img, tb.box(panel)) {
			t.Errorf("%s drew nothing", panel)
		}
	}
	var stacks bool
	tb.eval(`!document.querySelector('#flame').textContent.includes('No stacks') && Object.keys(JSON.parse(document.getElementById('data').textContent).frames).length > 0`, &stacks)
	if !stacks {
		t.Error("the page of PostgreSQL with off-CPU stacks has no stack")
	}
	checkFlame(t, tb)
	if out := os.Getenv("THREADCAP_SCREENSHOT"); out != "" {
		// The picture is of the page as it opens.
		tb.click(`#flame-reset`)
		var done bool
		tb.eval(`document.getElementById('flame-search').value = ''; document.getElementById('flame-search').dispatchEvent(new Event('input')); window.scrollTo(0, 0); true`, &done)
		_, png = tb.screenshot()
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", out)
	}
	tb.clean()
}

// checkFlame searches the flame graph's frames and zooms into the database's frame with a
// click, as a person would.
func checkFlame(t *testing.T, tb *tab) {
	t.Helper()
	const flame = `echarts.getInstanceByDom(document.getElementById('flame'))`
	var hits int
	tb.eval(`(() => { const s = document.getElementById('flame-search'); s.value = 'do_syscall'; s.dispatchEvent(new Event('input'));
		return `+flame+`.getOption().series[0].data.filter(d => d.itemStyle.color === '#c026d3').length; })()`, &hits)
	if hits == 0 {
		t.Error("searching the stacks for do_syscall marks no frame")
	}
	// The widest frame under the root is postgres's: click its middle.
	var at struct {
		X, Y, Width float64
		Name        string
	}
	tb.eval(`(() => { const c = `+flame+`; const d = c.getOption().series[0].data.filter(d => d.value[2] === 1).sort((a, b) => b.value[3] - a.value[3])[0];
		document.getElementById('flame').scrollIntoView(); const r = document.getElementById('flame').getBoundingClientRect();
		const p = c.convertToPixel({seriesIndex: 0}, [(d.value[0] + d.value[1]) / 2, 1.5]);
		return {X: r.left + p[0], Y: r.top + p[1], Width: d.value[3], Name: d.name}; })()`, &at)
	if err := chromedp.Run(tb.ctx, chromedp.MouseClickXY(at.X, at.Y), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var root struct {
		Name  string
		Width float64
	}
	tb.eval(`(() => { const d = `+flame+`.getOption().series[0].data[0]; return {Name: d.name, Width: d.value[3]}; })()`, &root)
	if root.Name != at.Name || root.Width != at.Width {
		t.Errorf("a click on %s (%v rows) zoomed to %s (%v rows)", at.Name, at.Width, root.Name, root.Width)
	}
}
