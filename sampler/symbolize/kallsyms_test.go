// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// kallsymsFixture holds a few lines of /proc/kallsyms: core text, the scheduler's section,
// data (ignored), and a module's symbols after the core kernel's, out of order.
var kallsymsFixture = filepath.Join("testdata", "kallsyms")

func TestKernelStackFrames(t *testing.T) {
	k, err := readKallsyms(kallsymsFixture)
	if err != nil {
		t.Fatal(err)
	}
	// As captured at switch-out, innermost first: the hook, the scheduler, then the wait.
	ips := []uint64{0xffffffffc0001010, 0xffffffff82100010, 0xffffffff82000110, 0xffffffff82000210,
		0xffffffff82000310, 0xffffffff81200040, 0xffffffff81300010, 0xffffffff81100020}
	var got []string
	for _, ip := range k.waitFrames(ips) {
		got = append(got, k.name(ip))
	}
	if want := []string{"kernel_clone", "__x64_sys_vfork", "do_syscall_64"}; !reflect.DeepEqual(got, want) {
		t.Errorf("wait frames %v, want %v", got, want)
	}
	if got := k.name(0xffffffffc0002040); got != "xfs_buf_read" {
		t.Errorf("a module address is in %q, want xfs_buf_read", got)
	}
	if got := k.name(0x1000); got != "0x1000" {
		t.Errorf("an address below every symbol is named %q", got)
	}
	empty := filepath.Join(t.TempDir(), "kallsyms")
	os.WriteFile(empty, []byte("0000000000000000 T _stext\n"), 0o644)
	if _, err := readKallsyms(empty); err != errNoAddresses {
		t.Errorf("kallsyms without addresses: %v, want errNoAddresses", err)
	}
}
