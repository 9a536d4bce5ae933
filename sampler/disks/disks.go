// SPDX-License-Identifier: Apache-2.0

// Package disks names block devices as lsblk does (its KNAME: vda, nvme0n1, loop3, dm-0),
// from /sys/dev/block/MAJ:MIN/uevent, and tells when a device is gone or has nothing in
// flight.
package disks

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/threadcap/threadcap/state"
)

// Names caches the names of the devices seen. A device number can be given to a new
// device once the old one is removed (a loop device detached and another attached under
// its number keeps its name, but not, say, an NVMe namespace's), so Forget drops a name
// found gone.
type Names struct {
	sys   string // the sysfs mount, /sys
	names map[state.Dev]string
}

// New reads names below sys, the sysfs mount ("/sys" when "").
func New(sys string) *Names {
	if sys == "" {
		sys = "/sys"
	}
	return &Names{sys: sys, names: map[state.Dev]string{}}
}

// Name is dev's DEVNAME; MAJ:MIN when it has none or is gone.
func (n *Names) Name(dev state.Dev) string {
	if name, ok := n.names[dev]; ok {
		return name
	}
	name, err := n.read(dev)
	if err != nil {
		// Not cached: a device being added may not have its uevent yet.
		return fmt.Sprintf("%d:%d", dev.Major(), dev.Minor())
	}
	n.names[dev] = name
	return name
}

// Exists tells whether dev is still a block device of the machine.
func (n *Names) Exists(dev state.Dev) bool {
	_, err := os.Stat(n.path(dev))
	return err == nil
}

// Idle tells whether dev has no request at its driver: both counts of
// /sys/dev/block/MAJ:MIN/inflight are 0. A device that cannot be read is not idle.
func (n *Names) Idle(dev state.Dev) bool {
	b, err := os.ReadFile(filepath.Join(n.path(dev), "inflight"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) == 2 && f[0] == "0" && f[1] == "0"
}

// Forget drops the cached name of a device that is gone.
func (n *Names) Forget(dev state.Dev) { delete(n.names, dev) }

func (n *Names) path(dev state.Dev) string {
	return filepath.Join(n.sys, "dev", "block", fmt.Sprintf("%d:%d", dev.Major(), dev.Minor()))
}

func (n *Names) read(dev state.Dev) (string, error) {
	b, err := os.ReadFile(filepath.Join(n.path(dev), "uevent"))
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if name, ok := bytes.CutPrefix(sc.Bytes(), []byte("DEVNAME=")); ok && len(name) > 0 {
			return string(name), nil
		}
	}
	return "", fmt.Errorf("%s/uevent has no DEVNAME", n.path(dev))
}
