// SPDX-License-Identifier: Apache-2.0

// Package pgtest runs a throwaway PostgreSQL cluster for the tests that watch a real
// database: in a temp dir, on its own port of 127.0.0.1.
package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/workload"
)

// Server is a throwaway PostgreSQL cluster in a temp dir, listening on its own port of
// 127.0.0.1 and its own unix socket directory, so that it meets no other server.
type Server struct {
	Bin  string // the directory of initdb, pg_ctl, postgres, pgbench and psql
	dir  string // data, socket and log
	Port int
	cred *syscall.Credential // the postgres OS user: initdb and postgres refuse root
}

// installHint is what to do when PostgreSQL is missing.
const installHint = "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb, pg_ctl, postgres, pgbench or psql): run `sudo make install-postgres`"

// postgresBin is the newest Debian PostgreSQL's bin directory that has what the test runs.
func postgresBin(t testing.TB) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, dir := range dirs {
		complete := true
		for _, name := range []string{"initdb", "pg_ctl", "postgres", "pgbench", "psql"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				complete = false
			}
		}
		if complete {
			return dir
		}
	}
	t.Fatal(installHint)
	return ""
}

// versionOf is the major version in /usr/lib/postgresql/VERSION/bin.
func versionOf(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

// Start creates a cluster and starts it. It is stopped, at once and without a
// checkpoint, and removed when the test ends, whether it passed or not.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartIn(t, postgresBin(t))
}

// StartIn is Start with the programs of the bin directory given, such as Private's.
func StartIn(t testing.TB, bin string) *Server {
	t.Helper()
	pg := &Server{Bin: bin}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("%v: %s", err, installHint)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}

	// Not t.TempDir: its parent is root's alone, and the postgres user must get in.
	if pg.dir, err = os.MkdirTemp("", "threadcap-pg-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pg.dir) })
	if err := os.Chown(pg.dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	pg.asPostgres(t, "initdb", "-D", pg.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")

	pg.Port = workload.FreePort(t)
	t.Cleanup(func() { pg.stop(t) })
	pg.asPostgres(t, "pg_ctl", "-D", pg.data(), "-l", filepath.Join(pg.dir, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=20", pg.Port, pg.dir), "start")
	return pg
}

// Private is a bin directory whose server programs are copies of the installed ones, in
// a tree that mirrors the installed one (its lib and share directories link to the real
// ones, where the server looks for them relative to itself). A copy is a file of its
// own: uprobes on it fire for this test's server only, not for another PostgreSQL
// running on the machine.
func Private(t testing.TB) string {
	t.Helper()
	real := postgresBin(t) // /usr/lib/postgresql/V/bin
	version := filepath.Base(filepath.Dir(real))
	root, err := os.MkdirTemp("", "threadcap-pgbin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	bin := filepath.Join(root, "usr", "lib", "postgresql", version, "bin")
	share := filepath.Join(root, "usr", "share", "postgresql")
	for _, dir := range []string{bin, share} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(filepath.Dir(real), "lib"):        filepath.Join(filepath.Dir(bin), "lib"),
		filepath.Join("/usr/share/postgresql", version): filepath.Join(share, version),
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		from, to := filepath.Join(real, e.Name()), filepath.Join(bin, e.Name())
		switch e.Name() {
		case "initdb", "pg_ctl", "postgres": // they find each other next to their own path
			data, err := os.ReadFile(from)
			if err == nil {
				err = os.WriteFile(to, data, 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
		default:
			links[from] = to
		}
	}
	for from, to := range links {
		if err := os.Symlink(from, to); err != nil {
			t.Fatal(err)
		}
	}
	// Every directory on the way must let the postgres user through.
	for dir := bin; dir != filepath.Dir(root); dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func (pg *Server) data() string { return filepath.Join(pg.dir, "data") }

// asPostgres runs one of the cluster's programs as the postgres user, and fails the test
// with its output and the server's log when it fails.
func (pg *Server) asPostgres(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(pg.Bin, name), args...)
	cmd.Dir = pg.dir
	cmd.Env = []string{"PATH=" + pg.Bin + ":/usr/bin:/bin", "LANG=C", "HOME=" + pg.dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(pg.dir, "log"))
		t.Fatalf("%s %s: %v\n%s\nserver log:\n%s", name, strings.Join(args, " "), err, out, log)
	}
}

// Pgbench is a pgbench command against the cluster, over TCP.
func (pg *Server) Pgbench(args ...string) *exec.Cmd {
	args = append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port), "-U", "postgres"}, args...)
	return exec.Command(filepath.Join(pg.Bin, "pgbench"), append(args, "postgres")...)
}

// Psql is a psql command running sql against the cluster, over TCP, printing bare values.
func (pg *Server) Psql(sql string) *exec.Cmd {
	return exec.Command(filepath.Join(pg.Bin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port),
		"-U", "postgres", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql, "postgres")
}

// stop ends the server at once. Should pg_ctl fail, the postmaster is killed by the pid
// its data directory names, and its children end with it.
func (pg *Server) stop(t testing.TB) {
	cmd := exec.Command(filepath.Join(pg.Bin, "pg_ctl"), "-D", pg.data(), "-m", "immediate", "-w", "-t", "30", "stop")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred}
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	b, rerr := os.ReadFile(filepath.Join(pg.data(), "postmaster.pid"))
	if rerr != nil {
		return // never started
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if pid, perr := strconv.Atoi(first); perr == nil {
		syscall.Kill(pid, syscall.SIGKILL)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if syscall.Kill(pid, 0) != nil {
				break
			}
		}
	}
	t.Errorf("pg_ctl stop: %v\n%s", err, out)
}
