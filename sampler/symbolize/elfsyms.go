// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"sort"
)

// elfSymbols resolves file offsets of one executable or library to function names, from
// its ELF symbol table (or, when stripped, its dynamic symbols).
type elfSymbols struct {
	loads []elf.ProgHeader // PT_LOAD segments: file offset to virtual address
	addrs []uint64         // sorted function start addresses
	ends  []uint64
	names []string
	// gopcln names the functions of a Go binary built without a symbol table (-s, as go
	// run and go test build): Go's own function table survives stripping.
	gopcln *gosym.Table
}

// readELFSymbols reads the function symbols of the ELF file at path.
func readELFSymbols(path string) (*elfSymbols, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading symbols of %s: %w", path, err)
	}
	defer f.Close()
	e := &elfSymbols{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			e.loads = append(e.loads, p.ProgHeader)
		}
	}
	syms, err := f.Symbols()
	if err != nil || len(syms) == 0 {
		// Stripped: a Go binary still has its function table; anything else only its
		// dynamic symbols (what a library exports).
		if e.gopcln = goFunctions(f); e.gopcln != nil {
			return e, nil
		}
		syms, _ = f.DynamicSymbols()
	}
	type fn struct {
		addr, size uint64
		name       string
	}
	var fns []fn
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			fns = append(fns, fn{s.Value, s.Size, s.Name})
		}
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].addr < fns[j].addr })
	for _, f := range fns {
		e.addrs = append(e.addrs, f.addr)
		e.ends = append(e.ends, f.addr+max(f.size, 1))
		e.names = append(e.names, f.name)
	}
	return e, nil
}

// name is the function at file offset off, "" when no symbol covers it.
func (e *elfSymbols) name(off uint64) string {
	vaddr, ok := e.vaddr(off)
	if !ok {
		return ""
	}
	if e.gopcln != nil {
		if fn := e.gopcln.PCToFunc(vaddr); fn != nil {
			return fn.Name
		}
		return ""
	}
	i := sort.Search(len(e.addrs), func(i int) bool { return e.addrs[i] > vaddr })
	if i == 0 || vaddr >= e.ends[i-1] {
		return ""
	}
	return e.names[i-1]
}

// vaddr turns a file offset into the virtual address symbols are given in.
func (e *elfSymbols) vaddr(off uint64) (uint64, bool) {
	for _, p := range e.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// goFunctions reads the function table of a Go binary; nil for any other file.
func goFunctions(f *elf.File) *gosym.Table {
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		return nil
	}
	data, err := pcln.Data()
	if err != nil {
		return nil
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil
	}
	return tab
}
