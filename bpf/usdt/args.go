// SPDX-License-Identifier: Apache-2.0

package usdt

import (
	"fmt"
	"strconv"
	"strings"
)

// ArgKind says where an argument's value is.
type ArgKind uint8

// The kinds, numbered as the kernel side's enum tc_arg_kind.
const (
	ArgNone  ArgKind = 0
	ArgConst ArgKind = 1 // the value itself: "4@$5"
	ArgReg   ArgKind = 2 // a register: "-4@%eax"
	ArgMem   ArgKind = 3 // memory at a register plus an offset: "8@-16(%rbp)", "4@(%r12)"
)

// Arg is where to read one probe argument in the probed thread: what the kernel side
// needs to read it from the saved user registers and user memory.
type Arg struct {
	Kind ArgKind
	// RegOff is the register's byte offset in the saved user registers (struct pt_regs).
	RegOff uint16
	// Value is the constant (ArgConst) or the memory offset (ArgMem).
	Value  int64
	Size   uint8 // 1, 2, 4 or 8 bytes
	Signed bool
}

// x86-64's struct pt_regs (arch/x86/include/uapi/asm/ptrace.h): the registers' slots.
var amd64Regs = func() map[string]uint16 {
	slots := []string{"r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8",
		"ax", "cx", "dx", "si", "di", "orig_ax", "ip", "cs", "flags", "sp", "ss"}
	regs := map[string]uint16{}
	for i, s := range slots {
		off := uint16(i * 8)
		switch s {
		case "ax", "bx", "cx", "dx":
			l := s[:1]
			regs["r"+s], regs["e"+s], regs[s], regs[l+"l"] = off, off, off, off
		case "si", "di", "bp", "sp":
			regs["r"+s], regs["e"+s], regs[s], regs[s+"l"] = off, off, off, off
		case "ip":
			regs["rip"] = off
		case "orig_ax", "cs", "flags", "ss":
		default: // r8 .. r15
			regs[s], regs[s+"d"], regs[s+"w"], regs[s+"b"] = off, off, off, off
		}
	}
	return regs
}()

// ParseArgs parses a probe's argument list, the note's space-separated specs such as
// "-4@%eax 8@(%rbx) 4@$1". The forms read are x86-64's: a constant ($N), a
// general-purpose register (%rax, %eax, %ax, %al, %r8d, …), and memory at a register plus
// a decimal offset (-16(%rbp), (%r12)). Any other form (an index register, a symbol
// relative to %rip, another architecture's syntax) is an error naming it.
func ParseArgs(specs string) ([]Arg, error) {
	var args []Arg
	for _, spec := range strings.Fields(specs) {
		a, err := parseArg(spec)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	return args, nil
}

func parseArg(spec string) (Arg, error) {
	sizeText, loc, ok := strings.Cut(spec, "@")
	if !ok {
		return Arg{}, fmt.Errorf("argument %q has no size: want SIZE@LOCATION", spec)
	}
	size, err := strconv.Atoi(sizeText)
	if err != nil {
		return Arg{}, fmt.Errorf("argument %q: bad size %q", spec, sizeText)
	}
	a := Arg{Signed: size < 0}
	if size < 0 {
		size = -size
	}
	switch size {
	case 1, 2, 4, 8:
		a.Size = uint8(size)
	default:
		return Arg{}, fmt.Errorf("argument %q: size %d is not 1, 2, 4 or 8", spec, size)
	}
	switch {
	case strings.HasPrefix(loc, "$"):
		v, err := strconv.ParseInt(loc[1:], 0, 64)
		if err != nil {
			return Arg{}, fmt.Errorf("argument %q: bad constant", spec)
		}
		a.Kind, a.Value = ArgConst, v
	case strings.HasPrefix(loc, "%"):
		off, ok := amd64Regs[loc[1:]]
		if !ok {
			return Arg{}, fmt.Errorf("argument %q: register %s is not supported", spec, loc)
		}
		a.Kind, a.RegOff = ArgReg, off
	case strings.HasSuffix(loc, ")"):
		offText, reg, ok := strings.Cut(strings.TrimSuffix(loc, ")"), "(")
		off, ok2 := amd64Regs[strings.TrimPrefix(reg, "%")]
		if !ok || !ok2 || !strings.HasPrefix(reg, "%") {
			return Arg{}, fmt.Errorf("argument %q: only OFFSET(%%register) memory is supported", spec)
		}
		if offText != "" {
			v, err := strconv.ParseInt(offText, 10, 32)
			if err != nil {
				return Arg{}, fmt.Errorf("argument %q: only a decimal offset is supported", spec)
			}
			a.Value = v
		}
		a.Kind, a.RegOff = ArgMem, off
	default:
		return Arg{}, fmt.Errorf("argument %q: location %q is not supported", spec, loc)
	}
	return a, nil
}

// FunctionArg is where argument n (1-based) of a function is at its entry, by the
// x86-64 System V calling convention: the first six integer arguments are in registers.
func FunctionArg(n int) (Arg, error) {
	regs := []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}
	if n < 1 || n > len(regs) {
		return Arg{}, fmt.Errorf("function argument %d: only arguments 1 to %d (in registers) can be read", n, len(regs))
	}
	return Arg{Kind: ArgReg, RegOff: amd64Regs[regs[n-1]], Size: 8, Signed: true}, nil
}
