// SPDX-License-Identifier: Apache-2.0

package invariants

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

// postgres is a throwaway PostgreSQL cluster in a temp dir, listening on its own port of
// 127.0.0.1 and its own unix socket directory, so that it meets no other server.
type postgres struct {
	bin  string // the directory of initdb, pg_ctl, postgres and pgbench
	dir  string // data, socket and log
	port int
	cred *syscall.Credential // the postgres OS user: initdb and postgres refuse root
}

// installHint is what to do when PostgreSQL is missing.
const installHint = "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb, pg_ctl, postgres or pgbench): run `sudo make install-postgres`"

// postgresBin is the newest Debian PostgreSQL's bin directory that has what the test runs.
func postgresBin(t testing.TB) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, dir := range dirs {
		complete := true
		for _, name := range []string{"initdb", "pg_ctl", "postgres", "pgbench"} {
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

// startPostgres creates a cluster and starts it. It is stopped, at once and without a
// checkpoint, and removed when the test ends, whether it passed or not.
func startPostgres(t testing.TB) *postgres {
	t.Helper()
	pg := &postgres{bin: postgresBin(t)}
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

	pg.port = workload.FreePort(t)
	t.Cleanup(func() { pg.stop(t) })
	pg.asPostgres(t, "pg_ctl", "-D", pg.data(), "-l", filepath.Join(pg.dir, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=20", pg.port, pg.dir), "start")
	return pg
}

func (pg *postgres) data() string { return filepath.Join(pg.dir, "data") }

// asPostgres runs one of the cluster's programs as the postgres user, and fails the test
// with its output and the server's log when it fails.
func (pg *postgres) asPostgres(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(pg.bin, name), args...)
	cmd.Dir = pg.dir
	cmd.Env = []string{"PATH=" + pg.bin + ":/usr/bin:/bin", "LANG=C", "HOME=" + pg.dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(pg.dir, "log"))
		t.Fatalf("%s %s: %v\n%s\nserver log:\n%s", name, strings.Join(args, " "), err, out, log)
	}
}

// pgbench is a pgbench command against the cluster, over TCP.
func (pg *postgres) pgbench(args ...string) *exec.Cmd {
	args = append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(pg.port), "-U", "postgres"}, args...)
	return exec.Command(filepath.Join(pg.bin, "pgbench"), append(args, "postgres")...)
}

// stop ends the server at once. Should pg_ctl fail, the postmaster is killed by the pid
// its data directory names, and its children end with it.
func (pg *postgres) stop(t testing.TB) {
	cmd := exec.Command(filepath.Join(pg.bin, "pg_ctl"), "-D", pg.data(), "-m", "immediate", "-w", "-t", "30", "stop")
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
