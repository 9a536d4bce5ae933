// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPerfMap: a JIT's perf map names the addresses inside its functions, a later line for
// the same start wins, and lines the JIT appends after the first read are found.
func TestPerfMap(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "42", "root", "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "42", "status"), []byte("Name:\tnode\nNSpid:\t42\t7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "42", "root", "tmp", "perf-7.map")
	lines := "7f0000001000 40 LazyCompile:~hotLoop /app/x.js:3\n" +
		"7f0000002000 0x20 Builtin:ArrayPush\n" +
		"not a line\n" +
		"7f0000001000 40 LazyCompile:*hotLoop /app/x.js:3\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newPerfMap(root, 42)
	if m == nil {
		t.Fatal("the perf map in the process's namespace (NSpid 7) was not found")
	}
	for ip, want := range map[uint64]string{
		0x7f0000001000: "LazyCompile:*hotLoop /app/x.js:3",
		0x7f000000103f: "LazyCompile:*hotLoop /app/x.js:3",
		0x7f0000001040: "",
		0x7f0000002010: "Builtin:ArrayPush",
	} {
		if got := m.name(ip); got != want {
			t.Errorf("%#x: %q, want %q", ip, got, want)
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("7f0000003000 10 JS:*later /app/x.js:9\n")
	f.Close()
	if got := m.name(0x7f0000003004); got != "JS:*later /app/x.js:9" {
		t.Errorf("a function the JIT added later: %q", got)
	}
	if newPerfMap(root, 43) != nil {
		t.Error("a process without a perf map has one")
	}
}

// TestDemangled: C++ and Rust names as their source says them, parameters left out; C and
// Go names as they are.
func TestDemangled(t *testing.T) {
	for in, want := range map[string]string{
		"_Z4spinIiEvT_":                          "spin<int>",
		"_ZNSt6vectorIiSaIiEE9push_backERKi":     "std::vector<int, std::allocator<int> >::push_back",
		"_ZN4core3fmt5write17h0123456789abcdefE": "core::fmt::write",
		"main.spin":                              "main.spin",
		"spin_alpha":                             "spin_alpha",
	} {
		if got := demangled(in); got != want {
			t.Errorf("demangled(%q) = %q, want %q", in, got, want)
		}
	}
}
