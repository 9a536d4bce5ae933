// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"os"
	"reflect"
	"testing"
)

// TestELFSymbolsOfThisBinary names one of this test binary's own functions from the
// binary's file: through its symbol table, or its Go function table when built stripped
// (as go test builds).
func TestELFSymbolsOfThisBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e, err := readELFSymbols(exe)
	if err != nil {
		t.Fatal(err)
	}
	pc := uint64(reflect.ValueOf(readELFSymbols).Pointer())
	// The loaded address back to a file offset, as a mapping's offset gives it.
	var off uint64
	found := false
	for _, p := range e.loads {
		if pc >= p.Vaddr && pc < p.Vaddr+p.Filesz {
			off, found = pc-p.Vaddr+p.Off, true
		}
	}
	if !found {
		t.Skip("this test binary is position-independent: its load address is not its link address")
	}
	if got, want := e.name(off+4), "github.com/threadcap/threadcap/sampler/symbolize.readELFSymbols"; got != want {
		t.Errorf("function at file offset %#x is %q, want %q", off+4, got, want)
	}
	if got := e.name(1 << 62); got != "" {
		t.Errorf("an offset outside the file is named %q", got)
	}
}
