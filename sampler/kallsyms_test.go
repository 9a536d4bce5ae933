// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// kallsymsFixture is a few lines of /proc/kallsyms: core text, the scheduler's section,
// data (ignored), and a module's symbols after the core kernel's, out of order.
const kallsymsFixture = `ffffffff81000000 T _stext
ffffffff81100000 T do_syscall_64
ffffffff81200000 t kernel_clone
ffffffff81300000 T __x64_sys_vfork
ffffffff81400000 D some_data
ffffffff82000000 T __sched_text_start
ffffffff82000100 t __schedule
ffffffff82000200 T schedule
ffffffff82000300 T wait_for_completion_state
ffffffff82001000 T __sched_text_end
ffffffff82100000 t __traceiter_sched_switch
ffffffffc0002000 t xfs_buf_read	[xfs]
ffffffffc0001000 t bpf_prog_6deef7357e7b4530_on_switch	[bpf]
`

func TestKernelStackFrames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(path, []byte(kallsymsFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := readKallsyms(path)
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
