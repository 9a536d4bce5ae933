// SPDX-License-Identifier: Apache-2.0

package html

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// tab is a page opened in a real headless Chromium (Debian's, `make install-chromium`),
// driven through the DevTools protocol, with the network cut off: every request other
// than the page's own file, every console error, exception and dialog is recorded.
type tab struct {
	t   testing.TB
	ctx context.Context
	url string

	mu       sync.Mutex
	errors   []string
	requests []string
	dialogs  []string
}

// chromium returns the browser's path; under CI=true a missing browser fails the test.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium: run make install-chromium")
	}
	t.Skip("no chromium (make install-chromium installs it)")
	return ""
}

// open loads the HTML file at path and waits until its script says it is drawn.
func open(t testing.TB, path string) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // the tests run as root
		chromedp.WindowSize(1400, 1000),
		// No network: no proxy reachable, no name resolves.
		chromedp.ProxyServer("127.0.0.1:9"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	tb := &tab{t: t, ctx: ctx, url: "file://" + path}
	chromedp.ListenTarget(ctx, func(ev any) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				tb.errors = append(tb.errors, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			tb.errors = append(tb.errors, "exception: "+e.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError || e.Entry.Level == log.LevelWarning {
				tb.errors = append(tb.errors, fmt.Sprintf("log %s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			if e.Request.URL != tb.url {
				tb.requests = append(tb.requests, e.Request.URL)
			}
		case *cdppage.EventJavascriptDialogOpening:
			tb.dialogs = append(tb.dialogs, e.Message)
			go chromedp.Run(ctx, cdppage.HandleJavaScriptDialog(false))
		}
	})
	err := chromedp.Run(ctx,
		network.Enable(),
		log.Enable(),
		network.EmulateNetworkConditions(true, 0, 0, 0),
		chromedp.Navigate(tb.url),
		chromedp.WaitReady(`body[data-ready="true"]`, chromedp.ByQuery),
		// ECharts draws on the next animation frame.
		chromedp.Sleep(300*time.Millisecond),
	)
	if err != nil {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		t.Fatalf("opening %s in chromium: %v; the page logged %q", path, err, tb.errors)
	}
	return tb
}

// clean fails the test on any console error, exception, dialog or request the page made.
func (tb *tab) clean() {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, e := range tb.errors {
		tb.t.Errorf("the page logged an error: %s", e)
	}
	for _, r := range tb.requests {
		tb.t.Errorf("the page made a request: %s", r)
	}
	for _, d := range tb.dialogs {
		tb.t.Errorf("the page opened a dialog: %q", d)
	}
}

// eval runs a JavaScript expression and decodes its value into out.
func (tb *tab) eval(js string, out any) {
	tb.t.Helper()
	if err := chromedp.Run(tb.ctx, chromedp.Evaluate(js, out)); err != nil {
		tb.t.Fatalf("evaluating %s: %v", js, err)
	}
}

// box is an element's place on the page, in CSS pixels from the document's corner.
type box struct{ X, Y, W, H float64 }

func (tb *tab) box(selector string) box {
	tb.t.Helper()
	var b box
	tb.eval(fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
		return {X: r.left + scrollX, Y: r.top + scrollY, W: r.width, H: r.height}; })()`, selector), &b)
	if b.W == 0 || b.H == 0 {
		tb.t.Fatalf("%s has no size on the page", selector)
	}
	return b
}

// drag presses the left button at (x0, y), moves to x1 in steps and releases it, as a
// person selecting a stretch of a chart does. Coordinates are the viewport's.
func (tb *tab) drag(x0, x1, y float64) {
	tb.t.Helper()
	actions := []chromedp.Action{
		input.DispatchMouseEvent(input.MouseMoved, x0, y),
		input.DispatchMouseEvent(input.MousePressed, x0, y).WithButton(input.Left).WithButtons(1).WithClickCount(1),
	}
	for i := 1; i <= 10; i++ {
		x := x0 + (x1-x0)*float64(i)/10
		actions = append(actions, input.DispatchMouseEvent(input.MouseMoved, x, y).WithButton(input.Left).WithButtons(1))
	}
	actions = append(actions, input.DispatchMouseEvent(input.MouseReleased, x1, y).WithButton(input.Left).WithButtons(0).WithClickCount(1),
		chromedp.Sleep(300*time.Millisecond))
	if err := chromedp.Run(tb.ctx, actions...); err != nil {
		tb.t.Fatalf("dragging: %v", err)
	}
}

// hover moves the mouse to a point of the document, scrolled into view.
func (tb *tab) hover(x, y float64) {
	tb.t.Helper()
	var scrollY float64
	tb.eval(fmt.Sprintf(`window.scrollTo(0, %f); scrollY`, y-300), &scrollY)
	if err := chromedp.Run(tb.ctx, input.DispatchMouseEvent(input.MouseMoved, x, y-scrollY), chromedp.Sleep(200*time.Millisecond)); err != nil {
		tb.t.Fatalf("hovering: %v", err)
	}
}

// click clicks the first element selector matches, with the mouse.
func (tb *tab) click(selector string) {
	tb.t.Helper()
	if err := chromedp.Run(tb.ctx, chromedp.ScrollIntoView(selector, chromedp.ByQuery),
		chromedp.Click(selector, chromedp.ByQuery, chromedp.NodeVisible), chromedp.Sleep(300*time.Millisecond)); err != nil {
		tb.t.Fatalf("clicking %s: %v", selector, err)
	}
}

// screenshot is the whole page as an image, one pixel a CSS pixel.
func (tb *tab) screenshot() (image.Image, []byte) {
	tb.t.Helper()
	var buf []byte
	if err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(&buf, 100)); err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		tb.t.Fatalf("decoding the screenshot: %v", err)
	}
	return img, buf
}

// drawn reports whether the pixels of img in b are not all one colour.
func drawn(img image.Image, b box) bool {
	r := image.Rect(int(b.X), int(b.Y), int(b.X+b.W), int(b.Y+b.H)).Intersect(img.Bounds())
	if r.Empty() {
		return false
	}
	first := img.At(r.Min.X, r.Min.Y)
	r0, g0, b0, _ := first.RGBA()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := img.At(x, y).RGBA()
			if r1 != r0 || g1 != g0 || b1 != b0 {
				return true
			}
		}
	}
	return false
}
