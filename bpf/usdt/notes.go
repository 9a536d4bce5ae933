// SPDX-License-Identifier: Apache-2.0

// Package usdt finds where to put a span's probes in an executable or library: its
// statically defined (USDT, SystemTap SDT) probes from the .note.stapsdt section, or a
// function symbol, as file offsets for uprobes, and where each probe's arguments are.
package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ntStapsdt is the type of a SystemTap SDT note (owner "stapsdt").
const ntStapsdt = 3

// Probe is one site of a USDT probe: a binary may have several for one provider:name.
type Probe struct {
	Provider, Name string
	// Offset is the site's offset in the file: where a uprobe goes.
	Offset uint64
	// Semaphore is the file offset of the probe's semaphore (the uprobe's reference
	// counter offset), 0 when the probe has none.
	Semaphore uint64
	// Args is the note's argument specs, as written ("-4@%eax 8@(%rbx)").
	Args string
}

// Notes reads the USDT probes of the ELF file at path, as the note format says
// (sourceware.org/systemtap/wiki/UserSpaceProbeImplementation): each note holds the
// probe's address, the link-time address of .stapsdt.base and the semaphore's, then
// provider, name and argument strings. When the file was prelinked, .stapsdt.base moved
// and every address moves with it.
func Notes(path string) ([]Probe, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".note.stapsdt")
	if sec == nil {
		return nil, nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: reading .note.stapsdt: %w", path, err)
	}
	var base uint64
	if b := f.Section(".stapsdt.base"); b != nil {
		base = b.Addr
	}
	var probes []Probe
	order := f.ByteOrder
	for len(data) >= 12 {
		nameSz, descSz, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
		data = data[12:]
		nameEnd, descEnd := align4(uint64(nameSz)), align4(uint64(nameSz))+align4(uint64(descSz))
		if descEnd > uint64(len(data)) {
			return nil, fmt.Errorf("%s: a .note.stapsdt note runs past its section", path)
		}
		owner, desc := data[:nameSz], data[nameEnd:nameEnd+uint64(descSz)]
		data = data[descEnd:]
		if typ != ntStapsdt || string(bytes.TrimRight(owner, "\x00")) != "stapsdt" {
			continue
		}
		p, err := parseNote(f, desc, order, base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		probes = append(probes, p)
	}
	return probes, nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// parseNote reads one note's description: pc, base and semaphore addresses (8 bytes each
// in a 64-bit file), then three NUL-terminated strings.
func parseNote(f *elf.File, desc []byte, order binary.ByteOrder, base uint64) (Probe, error) {
	if f.Class != elf.ELFCLASS64 || len(desc) < 24 {
		return Probe{}, errors.New("only 64-bit USDT notes are supported")
	}
	pc, noteBase, sema := order.Uint64(desc), order.Uint64(desc[8:]), order.Uint64(desc[16:])
	strs := strings.SplitN(string(desc[24:]), "\x00", 4)
	if len(strs) < 3 {
		return Probe{}, errors.New("a USDT note lacks its provider, name or arguments")
	}
	if base != 0 && noteBase != 0 {
		pc += base - noteBase
		if sema != 0 {
			sema += base - noteBase
		}
	}
	p := Probe{Provider: strs[0], Name: strs[1], Args: strs[2]}
	var err error
	if p.Offset, err = fileOffset(f, pc); err != nil {
		return Probe{}, fmt.Errorf("probe %s:%s: %w", p.Provider, p.Name, err)
	}
	if sema != 0 {
		if p.Semaphore, err = sectionOffset(f, sema); err != nil {
			return Probe{}, fmt.Errorf("probe %s:%s semaphore: %w", p.Provider, p.Name, err)
		}
	}
	return p, nil
}

// fileOffset turns a virtual address in an executable segment into an offset in the file.
func fileOffset(f *elf.File, addr uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Memsz {
			return addr - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("address %#x is in no executable segment", addr)
}

// sectionOffset turns the address of a semaphore (in .probes, or any data section) into
// its offset in the file, which is what the kernel's reference counter offset is.
func sectionOffset(f *elf.File, addr uint64) (uint64, error) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && s.Addr != 0 && addr >= s.Addr && addr < s.Addr+s.Size {
			return addr - s.Addr + s.Offset, nil
		}
	}
	return 0, fmt.Errorf("address %#x is in no section of the file", addr)
}

// Names lists the distinct provider:name of probes, sorted: what a binary offers, for an
// error message.
func Names(probes []Probe) []string {
	seen := map[string]bool{}
	var names []string
	for _, p := range probes {
		n := p.Provider + ":" + p.Name
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
