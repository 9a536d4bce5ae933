// SPDX-License-Identifier: Apache-2.0

// Package html renders what output/report computes as one self-contained HTML page: the
// active threads over time, a drill-down of the top activity, latency heatmaps, a flame
// graph and the busiest threads, all narrowed by a selection of time and by filters in the
// browser, from aggregates the page holds. It queries nothing itself: every number comes
// from report.Run, once, with the window's rows summed by bucket and by every column the
// page can group by.
package html

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/report"
	"github.com/threadcap/threadcap/output/report/html/echarts"
)

var (
	//go:embed page.html
	pageHTML string
	//go:embed page.js
	pageJS string
	//go:embed page.css
	pageCSS string
)

// Options are the facts about the recording the files do not hold.
type Options struct {
	// Host is the host the page names; the host it is made on when empty.
	Host string
	// CPUs is where the chart draws its CPU line; this machine's count when 0.
	CPUs int
}

// Write renders the page for q's window and filters (q.By, q.Step and q.Top are the page's
// own) from the hour files in dir. A window no file covers is a page that says so; a
// directory without hour files, or a file that cannot be read, is the error report gives.
func Write(w io.Writer, dir string, q report.Query, opts Options) error {
	p, err := build(dir, q, opts)
	if err != nil {
		return err
	}
	return render(w, p)
}

func build(dir string, q report.Query, opts Options) (*page, error) {
	p := &page{Version: echarts.Version, Host: opts.Host, CPUs: opts.CPUs, Columns: Columns,
		States: report.TimelineStates(), Where: q.Where, Files: []string{}, Lacks: []string{}, Frames: map[string]string{},
		Heatmaps: []heatmap{}, Cube: cube{Dims: []string{}, Values: [][]string{}, ThreadDims: []string{}, Threads: [][]int64{},
			Buckets: []bucket{}, Cells: [][]int64{}}}
	if p.Where == nil {
		p.Where = []report.Match{}
	}
	if p.Host == "" {
		p.Host, _ = os.Hostname()
		p.HostNote = "the host this page was made on"
	}
	if p.CPUs == 0 {
		p.CPUs = runtime.NumCPU()
		p.HostNote = "the host this page was made on"
	}
	step := Step(q.Window)
	p.From, p.To, p.StepMs = stamp(q.Window.From, q.Window), stamp(q.Window.To, q.Window), step.Milliseconds()
	empty, err := emptyWindow(dir, q.Window)
	if err != nil {
		return nil, err
	}
	if empty {
		p.Empty = "No hour file covers this window: threadcap recorded nothing then."
		return p, nil
	}
	q.By, q.Step, q.Top, q.BucketGroups, q.BucketHist = cubeColumns(), step, 0, true, "syscall_us"
	r, err := report.Run(dir, q)
	if err != nil {
		return nil, err
	}
	p.Files = r.Files
	if host := hostOf(dir, r.Files); host != "" && opts.Host == "" {
		p.Host, p.HostNote = host, "from the Parquet files' names; CPUs: the host this page was made on"
	}
	p.Cube = buildCube(r)
	if r.Ticks == 0 {
		p.Empty = "The files hold no tick in this window: threadcap was not running then."
		return p, nil
	}
	if len(r.Damaged) > 0 {
		p.Lacks = append(p.Lacks, report.DamageLines(r.Damaged)...)
	}
	if p.Frames, err = usedFrames(r.Files, p.Cube); err != nil {
		return nil, err
	}
	var lacks []string
	p.Heatmaps, lacks = heatmaps(dir, q.Window)
	p.Lacks = append(p.Lacks, lacks...)
	if p.Heatmaps == nil {
		p.Heatmaps = []heatmap{}
	}
	return p, nil
}

// hostOf is the host the Parquet files among files name, when they all name one.
func hostOf(dir string, files []string) string {
	host := ""
	for _, f := range files {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			return ""
		}
		n, ok := hourfile.Parse(filepath.ToSlash(rel))
		if !ok || n.Host == "" || (host != "" && n.Host != host) {
			return ""
		}
		host = n.Host
	}
	return host
}

// usedFrames are the frames of the stacks the cube's rows hold, and no others.
func usedFrames(files []string, c cube) (map[string]string, error) {
	all, err := report.StackFrames(files)
	if err != nil {
		return nil, err
	}
	used := map[string]string{}
	for i, dim := range c.Dims {
		if !slices.Contains(stackColumns, dim) {
			continue
		}
		for _, hash := range c.Values[i] {
			if f, ok := all[hash]; ok {
				used[hash] = f
			}
		}
	}
	return used, nil
}

// render writes the page. The data goes in as JSON in a script element the browser does
// not run, with <, > and & escaped as \u003c and so on (encoding/json's default), so no
// text from the files can end the element or open another; the script reads it with
// JSON.parse and writes every text with textContent. The Content-Security-Policy allows
// only the two inline scripts, by hash, and no request of any kind.
func render(w io.Writer, p *page) error {
	var data bytes.Buffer
	// Most of the data is the cube's cells, some 45 bytes each: room for them at once, not
	// by doubling.
	data.Grow(48*len(p.Cube.Cells) + 1<<20)
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("encoding the page's data: %w", err)
	}
	// No '<' at all, so no "</script" in any case.
	if bytes.IndexByte(data.Bytes(), '<') >= 0 {
		return errors.New("the page's data would end its script element") // encoding/json escapes '<': never
	}
	csp := strings.Join([]string{
		"default-src 'none'",
		"script-src " + hashOf(echarts.Script) + " " + hashOf(pageJS),
		// ECharts positions its tooltip with style attributes.
		"style-src 'unsafe-inline'",
		"img-src data:",
		"base-uri 'none'",
		"form-action 'none'",
	}, "; ")
	title := "threadcap " + p.Host + " " + p.From + " to " + p.To
	fill := strings.NewReplacer(
		"{{CSP}}", html.EscapeString(csp),
		"{{TITLE}}", html.EscapeString(title),
		"{{CSS}}", pageCSS,
		"{{ECHARTS}}", echarts.Script,
		"{{JS}}", pageJS,
	)
	// The data, megabytes, is written as it is rather than copied into the page's text.
	before, after, _ := strings.Cut(pageHTML, "{{DATA}}")
	if _, err := fill.WriteString(w, before); err != nil {
		return err
	}
	if _, err := w.Write(data.Bytes()); err != nil {
		return err
	}
	_, err := fill.WriteString(w, after)
	return err
}

// hashOf is a CSP source that allows an inline script of exactly this text.
func hashOf(script string) string {
	sum := sha256.Sum256([]byte(script))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}
