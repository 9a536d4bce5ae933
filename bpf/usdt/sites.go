// SPDX-License-Identifier: Apache-2.0

package usdt

import (
	"debug/elf"
	"fmt"
	"os"
	"sort"
	"strings"
)

// PointKind is how a probe point is found in a binary.
type PointKind string

// The kinds of probe point a span's start or end can be.
const (
	// USDT is a statically defined probe, "usdt PROVIDER:NAME".
	USDT PointKind = "usdt"
	// Entry is a uprobe at a function's entry, "entry SYMBOL".
	Entry PointKind = "entry"
	// Return is a uretprobe at a function's return, "return SYMBOL".
	Return PointKind = "return"
)

// Point is a span's start or end as configured.
type Point struct {
	Kind PointKind
	// Name is PROVIDER:NAME for USDT, the symbol otherwise.
	Name string
}

func (p Point) String() string { return string(p.Kind) + " " + p.Name }

// ParsePoint reads "usdt PROVIDER:NAME", "entry SYMBOL" or "return SYMBOL".
func ParsePoint(s string) (Point, error) {
	kind, name, _ := strings.Cut(strings.TrimSpace(s), " ")
	p := Point{Kind: PointKind(kind), Name: strings.TrimSpace(name)}
	switch p.Kind {
	case USDT:
		if prov, n, ok := strings.Cut(p.Name, ":"); !ok || prov == "" || n == "" {
			return Point{}, fmt.Errorf("%q: write a USDT probe as \"usdt PROVIDER:NAME\", like \"usdt postgresql:query__start\"", s)
		}
	case Entry, Return:
		if p.Name == "" || strings.ContainsAny(p.Name, " \t") {
			return Point{}, fmt.Errorf("%q: write a function as \"%s SYMBOL\"", s, p.Kind)
		}
	default:
		return Point{}, fmt.Errorf("%q: a probe point is \"usdt PROVIDER:NAME\", \"entry SYMBOL\" or \"return SYMBOL\"", s)
	}
	return p, nil
}

// Site is one place in a file where a probe goes, with where its arguments are.
type Site struct {
	Path string
	// Offset is the instruction's offset in the file; Return makes it a uretprobe on
	// the function there.
	Offset uint64
	Return bool
	// Semaphore is the file offset of the USDT probe's semaphore, 0 if none.
	Semaphore uint64
	// Args is where each argument is, for a USDT probe or a function's entry; nil at a
	// return.
	Args []Arg
}

// Arg is where argument n (1-based) is at the site.
func (s Site) Arg(n int) (Arg, error) {
	if n < 1 || n > len(s.Args) {
		return Arg{}, fmt.Errorf("argument %d: the probe has %d", n, len(s.Args))
	}
	return s.Args[n-1], nil
}

// Sites finds every site of p in the ELF file at path: a USDT probe may have several
// (the compiler copies inlined code). The error of a probe not there lists what the
// file offers.
func (p Point) Sites(path string) ([]Site, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("binary %s: %w", path, err)
	}
	if p.Kind == USDT {
		return usdtSites(path, p.Name)
	}
	return symbolSites(path, p)
}

func usdtSites(path, name string) ([]Site, error) {
	probes, err := Notes(path)
	if err != nil {
		return nil, err
	}
	if len(probes) == 0 {
		return nil, fmt.Errorf("%s has no USDT probes (no .note.stapsdt section): use \"entry SYMBOL\" or \"return SYMBOL\" probes, or a binary built with SDT probes", path)
	}
	var sites []Site
	for _, pr := range probes {
		if pr.Provider+":"+pr.Name != name {
			continue
		}
		args, err := ParseArgs(pr.Args)
		if err != nil {
			return nil, fmt.Errorf("%s: probe %s: %w", path, name, err)
		}
		sites = append(sites, Site{Path: path, Offset: pr.Offset, Semaphore: pr.Semaphore, Args: args})
	}
	if len(sites) == 0 {
		return nil, fmt.Errorf("%s has no USDT probe %s; it has %s", path, name, strings.Join(Names(probes), ", "))
	}
	return sites, nil
}

func symbolSites(path string, p Point) ([]Site, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	var funcs []string
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		if s.Name != p.Name {
			funcs = append(funcs, s.Name)
			continue
		}
		off, err := fileOffset(f, s.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: function %s: %w", path, p.Name, err)
		}
		site := Site{Path: path, Offset: off, Return: p.Kind == Return}
		if p.Kind == Entry {
			for n := 1; n <= 6; n++ {
				a, _ := FunctionArg(n)
				site.Args = append(site.Args, a)
			}
		}
		return []Site{site}, nil
	}
	if len(funcs) == 0 {
		return nil, fmt.Errorf("%s has no function symbols: is it stripped?", path)
	}
	sort.Strings(funcs)
	if len(funcs) > 20 {
		funcs = append(funcs[:20], fmt.Sprintf("and %d more", len(funcs)-20))
	}
	return nil, fmt.Errorf("%s has no function %s; it has %s", path, p.Name, strings.Join(funcs, ", "))
}
