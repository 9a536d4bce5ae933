// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"time"

	"github.com/threadcap/threadcap/test/bench/floor"
)

// config is one of the configurations compared: no tracer, the floor, or the threadcap
// daemon in a syscall mode at a rate.
type config struct {
	name string
	// mode and hz are the daemon's --syscalls and --hz; mode is empty for no daemon.
	mode string
	hz   int
	// settings is a config file for the daemon that turns enrichments on or off; empty
	// for the defaults, which are what the targets are about.
	settings string
	// floor attaches the empty programs instead.
	floor floorHooks
}

// floorHooks says which hooks a floor configuration has empty programs on.
type floorHooks int

const (
	noFloor      floorHooks = iota
	floorAll                // every hook threadcap uses
	floorPassive            // passive mode's: all but the raw_syscalls pair
)

const (
	configNone         = "none"
	configFloor        = "floor"
	configFloorPassive = "floor passive"
)

// enrichments are the daemon's settings whose cost the hot-path workloads show against
// the defaults (cgroup and fd_target columns, kernel stacks of D-state threads): all of
// them off, and the stacks that cost a stack walk at every voluntary switch.
var enrichments = []struct{ name, settings string }{
	{"enrichments off", "columns: {cgroup: false, fd_target: false}\nstacks: {kernel: \"off\"}\n"},
	{"off-CPU stacks", "stacks: {kernel: off-cpu}\n"},
	{"off-CPU + user stacks", "stacks: {kernel: off-cpu, user: true}\n"},
	{configIOOff, "io: false\n"},
}

// configIOOff is the enrichment without block I/O tracking, which is on by default.
const configIOOff = "io off"

// modeTick is the hook-free mode (syscalls tick), whose cost per tick is a pass over every
// thread: it has targets of its own.
const modeTick = "tick"

// configs are the configurations of a run, in the order of the first round: the
// enrichment variants run in full mode at the first rate.
func configs(rates []int) []config {
	cs := []config{{name: configNone}, {name: configFloor, floor: floorAll},
		{name: configFloorPassive, floor: floorPassive}}
	for _, mode := range []string{"full", "passive", modeTick} {
		for _, hz := range rates {
			cs = append(cs, config{name: fmt.Sprintf("%s %dHz", mode, hz), mode: mode, hz: hz})
		}
	}
	if len(rates) > 0 {
		for _, e := range enrichments {
			cs = append(cs, config{name: fmt.Sprintf("full %dHz, %s", rates[0], e.name), mode: "full",
				hz: rates[0], settings: e.settings})
		}
	}
	return cs
}

// daemon reports whether c runs threadcap.
func (c config) daemon() bool { return c.mode != "" }

// tracer is a configuration in effect while a workload is measured.
type tracer interface {
	// settle returns once the tracer has taken a tick after everything the workload did
	// until now, so that a window started then measures steady state.
	settle()
	// mark reads the tracer's own cost counters, at the start and end of a window.
	mark() (costMark, error)
	Close() error
}

// costMark is the daemon's cumulative cost at one instant; zero for the other configs.
type costMark struct {
	at       time.Time
	cpuNs    uint64
	csvBytes map[string]int64
	hwmKB    int64
}

// attach puts c in effect. startup is how long the daemon took from exec to its first
// row in the CSV, zero for the others.
func attach(c config, opt options) (t tracer, startup time.Duration, err error) {
	switch {
	case c.floor != noFloor:
		h, err := floor.Attach(c.floor == floorAll)
		if err != nil {
			return nil, 0, err
		}
		return passiveTracer{h}, 0, nil
	case c.daemon():
		d, err := startDaemon(opt.daemon, c, opt.tmp)
		if err != nil {
			return nil, 0, err
		}
		return d, d.startup, nil
	}
	return passiveTracer{}, 0, nil
}

// passiveTracer is no tracer, or the floor: nothing in user space to wait for or measure.
type passiveTracer struct{ hooks *floor.Hooks }

// quiet is how long the machine is left after a workload's wake before measuring.
const quiet = 300 * time.Millisecond

func (p passiveTracer) settle()                 { time.Sleep(quiet) }
func (p passiveTracer) mark() (costMark, error) { return costMark{at: time.Now()}, nil }
func (p passiveTracer) Close() error            { return p.hooks.Close() }
