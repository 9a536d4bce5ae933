// SPDX-License-Identifier: Apache-2.0

package ship

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/test/workload"
)

const (
	testAccess = "threadcaptest"
	testSecret = "threadcap-test-secret-key"
	testBucket = "hours"
)

// s3Server is a real S3-compatible server (versitygw, over a directory) on 127.0.0.1.
type s3Server struct {
	t      *testing.T
	bin    string
	root   string   // the directory it stores buckets in: root/BUCKET/KEY
	logs   []string // its access logs, one per start
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startS3 starts versitygw on a free port, with testBucket created; make install-s3
// installs it. It is stopped when the test ends, whatever the outcome.
func startS3(t *testing.T) *s3Server {
	t.Helper()
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("versitygw is not installed: make install-s3 installs it")
		}
		t.Skip("versitygw is not installed: make install-s3 installs it")
	}
	s := &s3Server{t: t, bin: bin, root: t.TempDir(), addr: fmt.Sprintf("127.0.0.1:%d", workload.FreePort(t))}
	if err := os.Mkdir(filepath.Join(s.root, testBucket), 0o755); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// start runs the server and waits until it accepts connections.
func (s *s3Server) start() {
	s.t.Helper()
	s.logs = append(s.logs, filepath.Join(s.t.TempDir(), "access.log"))
	s.cmd = exec.Command(s.bin, "--access", testAccess, "--secret", testSecret, "--port", s.addr,
		"--access-log", s.logs[len(s.logs)-1], "--quiet", "posix", s.root)
	var out bytes.Buffer
	s.cmd.Stdout, s.cmd.Stderr = &out, &out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.exited) }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", s.addr); err == nil {
			c.Close()
			return
		}
		select {
		case <-s.exited:
			s.t.Fatalf("versitygw exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("versitygw never listened on %s: %s", s.addr, out.String())
		}
	}
}

// stop stops the server, as an outage would; SIGTERM first, which lets it write out its
// access log.
func (s *s3Server) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// puts counts the PUT requests for key the server logged as done (status 200).
func (s *s3Server) puts(key string) int {
	s.t.Helper()
	n := 0
	for _, log := range s.logs {
		b, err := os.ReadFile(log)
		if err != nil {
			s.t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, " s3_PutObject "+key+" ") && strings.Contains(line, ".parquet 200 ") {
				n++
			}
		}
	}
	return n
}

// object is what the server stored under key.
func (s *s3Server) object(key string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.root, testBucket, filepath.FromSlash(key)))
}

// writeHours writes n Parquet hour files of made-up content into dir's tree, from hour on,
// and returns them.
func writeHours(t *testing.T, dir string, hour time.Time, n int) []hourfile.File {
	t.Helper()
	var files []hourfile.File
	for i := range n {
		h := hour.Add(time.Duration(i) * time.Hour)
		name := hourfile.Name{Kind: hourfile.Samples, Hour: h, Suffix: hourfile.Parquet, Host: "db-1"}
		path := filepath.Join(dir, filepath.FromSlash(name.String()))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		body := bytes.Repeat([]byte(fmt.Sprintf("PAR1 hour %v ", h)), 1000+i)
		if err := os.WriteFile(path, body, 0o640); err != nil {
			t.Fatal(err)
		}
		files = append(files, hourfile.File{Name: name, Path: path})
	}
	return files
}

// logs collects a shipper's log entries.
type logs struct {
	*test.Hook
	entry *logrus.Entry
}

func newLogs() logs {
	logger, hook := test.NewNullLogger()
	return logs{hook, logrus.NewEntry(logger)}
}

func (l logs) count(msg string) int {
	n := 0
	for _, e := range l.AllEntries() {
		if e.Message == msg {
			n++
		}
	}
	return n
}

// running is a shipper running in the background until stop.
type running struct {
	*Shipper
	cancel context.CancelFunc
	done   chan struct{}
}

func runShipper(t *testing.T, dir, addr, secret string, l logs) *running {
	t.Helper()
	s, err := New(Config{Dir: dir, Endpoint: addr, Bucket: testBucket, Prefix: "prod/eu", Interval: 50 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond, Timeout: 10 * time.Second, Log: l.entry}, Credentials{AccessKey: testAccess, SecretKey: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Shipper: s, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); s.Run(ctx) }()
	var once sync.Once
	t.Cleanup(func() { once.Do(r.stop) })
	return r
}

func (r *running) stop() {
	r.cancel()
	<-r.done
	r.Close()
}

// waitShipped waits until nothing is left to ship. The limit only stops a broken build
// from hanging; it measures nothing.
func waitShipped(t *testing.T, s *Shipper) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		backlog, err := s.Backlog()
		if err == nil && len(backlog) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backlog never shipped: %v, %v", backlog, err)
		}
	}
}

// checkBucket checks that the bucket holds every file byte for byte, and the journal each
// key exactly once.
func checkBucket(t *testing.T, srv *s3Server, dir string, files []hourfile.File) {
	t.Helper()
	for _, f := range files {
		want, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := srv.object("prod/eu/" + f.String())
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s in the bucket: %d bytes (%v), want the file's %d", f.String(), len(got), err, len(want))
		}
	}
	journal, err := os.ReadFile(filepath.Join(dir, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(journal), "\n"), "\n")
	seen := map[string]int{}
	for _, l := range lines {
		seen[l]++
	}
	for _, f := range files {
		if seen["prod/eu/"+f.String()] != 1 {
			t.Errorf("%s is in the journal %d times, want once", f.String(), seen["prod/eu/"+f.String()])
		}
	}
	if len(lines) != len(files) {
		t.Errorf("journal has %d lines, want %d:\n%s", len(lines), len(files), journal)
	}
}

func TestShipsEachHourOnce(t *testing.T) {
	srv := startS3(t)
	dir := t.TempDir()
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	files := writeHours(t, dir, start, 3)
	l := newLogs()
	r := runShipper(t, dir, srv.addr, testSecret, l)
	waitShipped(t, r.Shipper)
	r.stop()
	checkBucket(t, srv, dir, files)
	if n := l.count("shipped hour file"); n != 3 {
		t.Errorf("%d uploads, want 3", n)
	}

	// A restart resumes with the hours that closed since, and uploads none twice.
	files = append(files, writeHours(t, dir, start.Add(3*time.Hour), 2)...)
	l = newLogs()
	r = runShipper(t, dir, srv.addr, testSecret, l)
	if len(mustBacklog(t, r.Shipper)) != 2 {
		t.Errorf("after a restart, backlog %v, want the 2 new hours", mustBacklog(t, r.Shipper))
	}
	waitShipped(t, r.Shipper)
	r.stop()
	checkBucket(t, srv, dir, files)
	if n, again := l.count("shipped hour file"), l.count("hour file was in the bucket already"); n != 2 || again != 0 {
		t.Errorf("after a restart: %d uploads, %d found there, want 2 and 0", n, again)
	}
}

// TestShipsTheBacklogAfterAnOutage stops the endpoint while hours close, then starts it
// again: every hour arrives, once, and none is lost while the endpoint is down.
func TestShipsTheBacklogAfterAnOutage(t *testing.T) {
	srv := startS3(t)
	dir := t.TempDir()
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	files := writeHours(t, dir, start, 1)
	l := newLogs()
	r := runShipper(t, dir, srv.addr, testSecret, l)
	waitShipped(t, r.Shipper)

	srv.stop()
	t.Logf("%s endpoint stopped", time.Now().Format(time.StampMilli))
	files = append(files, writeHours(t, dir, start.Add(time.Hour), 3)...)
	for deadline := time.Now().Add(time.Minute); l.count("shipping failed; the hour files stay and are tried again with backoff") == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no failure logged while the endpoint was down")
		}
	}
	time.Sleep(time.Second) // a few retries with backoff
	t.Logf("%s failures logged: %d, backlog %d", time.Now().Format(time.StampMilli),
		l.count("shipping failed; the hour files stay and are tried again with backoff"), len(mustBacklog(t, r.Shipper)))
	if got := len(mustBacklog(t, r.Shipper)); got != 3 {
		t.Errorf("backlog during the outage: %d, want the 3 hours that closed", got)
	}
	for _, f := range files {
		if _, err := os.Stat(f.Path); err != nil {
			t.Errorf("%s during the outage: %v", f.Path, err)
		}
	}
	srv.start()
	t.Logf("%s endpoint started", time.Now().Format(time.StampMilli))
	waitShipped(t, r.Shipper)
	t.Logf("%s backlog shipped", time.Now().Format(time.StampMilli))
	r.stop()
	checkBucket(t, srv, dir, files)
	if n := l.count("shipped hour file"); n != 4 {
		t.Errorf("%d uploads, want 4, one per hour", n)
	}
	srv.stop()
	for _, f := range files {
		if n := srv.puts("prod/eu/" + f.String()); n != 1 {
			t.Errorf("the server logged %d PUTs of %s, want 1", n, f.String())
		}
	}
	if l.count("shipping works again; the backlog is shipped") != 1 {
		t.Error("the recovery was not logged once")
	}
}

// TestResumesAfterACrashMidUpload: an hour uploaded by a run that died before noting it is
// found in the bucket, byte for byte, and not uploaded again; one whose upload was cut
// short is uploaded whole.
func TestResumesAfterACrashMidUpload(t *testing.T) {
	srv := startS3(t)
	dir := t.TempDir()
	files := writeHours(t, dir, time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC), 2)
	// The first run uploaded the first hour and was killed before its journal line.
	s, err := New(Config{Dir: dir, Endpoint: srv.addr, Bucket: testBucket, Prefix: "prod/eu", Timeout: 10 * time.Second},
		Credentials{AccessKey: testAccess, SecretKey: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	d, err := digestFile(files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.client.put(context.Background(), s.Key(files[0]), files[0].Path, d); err != nil {
		t.Fatal(err)
	}
	// and was killed in the middle of the second's, a request as the shipper sends it
	// (Content-MD5, signed SHA-256) that ends half sent.
	whole, err := os.ReadFile(files[1].Path)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := digestFile(files[1].Path)
	if err != nil {
		t.Fatal(err)
	}
	cut, cancel := context.WithCancel(context.Background())
	req, err := s.client.request(cut, "PUT", s.Key(files[1]), &cutReader{data: whole, cancel: cancel})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = d1.size
	req.Header.Set("Content-Md5", base64.StdEncoding.EncodeToString(d1.md5))
	sign(req, s.client.creds, s.client.region, d1.sha256, time.Now())
	if _, err := s.client.http.Do(req); err == nil {
		t.Fatal("a cut upload succeeded")
	}
	if b, err := srv.object(s.Key(files[1])); err == nil {
		// Whatever a server keeps of it, its ETag is not the file's MD5: it is uploaded again.
		t.Logf("the server kept %d bytes of the cut upload", len(b))
	}

	l := newLogs()
	r := runShipper(t, dir, srv.addr, testSecret, l)
	waitShipped(t, r.Shipper)
	r.stop()
	checkBucket(t, srv, dir, files)
	if n, again := l.count("shipped hour file"), l.count("hour file was in the bucket already"); n != 1 || again != 1 {
		t.Errorf("%d uploads, %d found there, want 1 and 1", n, again)
	}
}

// cutReader sends half its data, then cancels the request, as a killed process would.
type cutReader struct {
	data   []byte
	off    int
	cancel context.CancelFunc
}

func (r *cutReader) Read(p []byte) (int, error) {
	if r.off >= len(r.data)/2 {
		r.cancel()
		return 0, context.Canceled
	}
	n := copy(p[:min(len(p), 1024)], r.data[r.off:len(r.data)/2])
	r.off += n
	return n, nil
}

// TestWrongCredentials: a clear error, and nothing deleted or marked shipped.
func TestWrongCredentials(t *testing.T) {
	srv := startS3(t)
	dir := t.TempDir()
	files := writeHours(t, dir, time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC), 2)
	s, err := New(Config{Dir: dir, Endpoint: srv.addr, Bucket: testBucket, Timeout: 10 * time.Second},
		Credentials{AccessKey: testAccess, SecretKey: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	err = s.pass(context.Background())
	if !errors.Is(err, ErrCredentials) || !strings.Contains(err.Error(), "check ship.credentials_file") {
		t.Errorf("wrong secret: %v, want ErrCredentials saying what to check", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error shows the secret: %v", err)
	}
	for _, f := range files {
		if _, err := os.Stat(f.Path); err != nil || !s.Held(f) {
			t.Errorf("%s after a refusal: %v, held %v", f.Path, err, s.Held(f))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, JournalName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal after a refusal: %v", err)
	}
}

// TestTheEndpointChecksTheChecksum: a body that does not match its MD5 is refused, so a
// file damaged on the way never lands.
func TestTheEndpointChecksTheChecksum(t *testing.T) {
	srv := startS3(t)
	dir := t.TempDir()
	files := writeHours(t, dir, time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC), 2)
	s, err := New(Config{Dir: dir, Endpoint: srv.addr, Bucket: testBucket, Timeout: 10 * time.Second},
		Credentials{AccessKey: testAccess, SecretKey: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	other, err := digestFile(files[1].Path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := digestFile(files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	d.md5 = other.md5
	if err := s.client.put(context.Background(), s.Key(files[0]), files[0].Path, d); err == nil {
		t.Error("a body with another file's MD5 was stored")
	}
	if _, err := srv.object(s.Key(files[0])); err == nil {
		t.Error("the server kept the damaged body")
	}
}

func mustBacklog(t *testing.T, s *Shipper) []hourfile.File {
	t.Helper()
	b, err := s.Backlog()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadCredentials(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "creds")
	if err := os.WriteFile(path, []byte("# for threadcap\naccess_key_id: AK\nsecret_access_key: s3cr3t\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCredentials(path)
	if err != nil || c.AccessKey != "AK" || c.SecretKey != "s3cr3t" {
		t.Errorf("LoadCredentials = %+v, %v", c, err)
	}
	if strings.Contains(fmt.Sprint(c), "s3cr3t") || strings.Contains(fmt.Sprintf("%+v", c), "s3cr3t") {
		t.Error("the credentials print their secret")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCredentials(path); err == nil || !strings.Contains(err.Error(), "chmod o-rwx") {
		t.Errorf("a world-readable file: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCredentials(bad); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a bad line: %v, want an error that does not show it", err)
	}
	t.Setenv(EnvAccessKey, "AK2")
	t.Setenv(EnvSecretKey, "")
	if _, err := LoadCredentials(""); err == nil {
		t.Error("half the credentials in the environment were taken")
	}
	t.Setenv(EnvSecretKey, "x")
	if c, err := LoadCredentials(""); err != nil || c.AccessKey != "AK2" {
		t.Errorf("from the environment: %+v, %v", c, err)
	}
}
