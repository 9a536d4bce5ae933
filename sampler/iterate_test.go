// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"io"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/state"
)

// iteratingSource is a fakeSource whose records a pass at each tick writes, as in bpf's
// hook-free mode; its n-th pass takes n ms.
type iteratingSource struct {
	fakeSource
	passes []uint64 // the tick of each pass
}

func (f *iteratingSource) Iterate(mono uint64) (time.Duration, error) {
	f.passes = append(f.passes, mono)
	return time.Duration(len(f.passes)) * time.Millisecond, nil
}

func (f *iteratingSource) HookFree() bool { return true }

func TestHookFreeSourceIsReadAtTheTick(t *testing.T) {
	src := &iteratingSource{fakeSource: fakeSource{recs: map[uint32]*state.Thread{}}}
	mono := uint64(100 * sec)
	log := logrus.New()
	log.SetOutput(io.Discard)
	s, err := New(Config{
		Interval: time.Second, ProcRoot: t.TempDir(), Self: 999,
		Mono: func() uint64 { return mono }, Wall: func() time.Time { return time.Unix(0, int64(mono)) }, Log: logrus.NewEntry(log),
	}, src, &fakeSink{})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.settle(); d != 0 {
		t.Errorf("a hook-free source is read %v after the tick, want at once", d)
	}
	for _, at := range []uint64{100 * sec, 101 * sec} {
		mono = at
		if err := s.Tick(time.Unix(0, int64(at))); err != nil {
			t.Fatal(err)
		}
	}
	if len(src.passes) != 2 || src.passes[0] != 100*sec || src.passes[1] != 101*sec {
		t.Errorf("passes at %v, want one at each tick", src.passes)
	}
	if got := s.Stats().LongestPass; got != 2*time.Millisecond {
		t.Errorf("longest pass %v, want 2ms", got)
	}
	if d := newRig(t, Filter{}).s.settle(); d != 30*time.Millisecond {
		t.Errorf("a source with hooks is read %v after the tick, want 30ms", d)
	}
}
