// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// bpfObjects are the ids of the programs and links a process holds.
type bpfObjects struct {
	progs []ebpf.ProgramID
	links []link.ID
}

// heldBy lists the BPF programs and links pid holds, from the fdinfo of its descriptors:
// only threadcap's own, whatever else the machine runs.
func heldBy(t *testing.T, pid int) bpfObjects {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var objs bpfObjects
	seen := map[string]bool{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		for _, line := range strings.Split(string(data), "\n") {
			key, value, ok := strings.Cut(line, ":")
			if !ok || seen[line] {
				continue
			}
			id, err := strconv.ParseUint(strings.TrimSpace(value), 10, 32)
			if err != nil {
				continue
			}
			switch key {
			case "prog_id": // a program's fd, or the program of a link's fd
				objs.progs = append(objs.progs, ebpf.ProgramID(id))
			case "link_id":
				objs.links = append(objs.links, link.ID(id))
			default:
				continue
			}
			seen[line] = true
		}
	}
	return objs
}

// stillLoaded lists the objects that exist in the kernel.
func stillLoaded(t *testing.T, objs bpfObjects) []string {
	t.Helper()
	var left []string
	for _, id := range objs.progs {
		p, err := ebpf.NewProgramFromID(id)
		if err == nil {
			p.Close()
			left = append(left, fmt.Sprintf("program %d", id))
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("looking up program %d: %v", id, err)
		}
	}
	for _, id := range objs.links {
		l, err := link.NewFromID(id)
		if err == nil {
			l.Close()
			left = append(left, fmt.Sprintf("link %d", id))
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("looking up link %d: %v", id, err)
		}
	}
	return left
}

// requireDetached fails unless every object is gone. The kernel frees a link's program
// after an RCU grace period, so a short wait is allowed; a pinned or leaked object stays.
func requireDetached(t *testing.T, objs bpfObjects) {
	t.Helper()
	deadline := time.Now().Add(stopLimit)
	for {
		left := stillLoaded(t, objs)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after threadcap exited, still in the kernel: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
