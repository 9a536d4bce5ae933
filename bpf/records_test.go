// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestRecordLeftClaimedIsRecovered: a record found claimed (seq odd) is skipped and counted
// as a torn read; found claimed by the same write at the next tick, it is released to the
// next generation, read, and counted once as recovered. A record whose claim changed
// between the two ticks (writers come and go) is not touched. No kernel needed: the array
// is plain memory here, as the mapping is to the reader.
func TestRecordLeftClaimedIsRecovered(t *testing.T) {
	const claimedBy3 = 5*seqGen | 3<<1 | 1
	tr := &Tracker{records: &recordArray{recs: make([]Record, 3)}, stuck: map[uint32]uint32{}}
	tr.records.recs[0] = Record{Seq: 4 * seqGen, Tid: 10}
	tr.records.recs[1] = Record{Seq: claimedBy3, Tid: 11}
	tr.records.recs[2] = Record{Seq: claimedBy3, Tid: 12}
	var rec Record
	for slot := range uint32(3) {
		if got := tr.loadRecord(slot, &rec); got != (slot == 0) {
			t.Errorf("first tick, slot %d: loaded %v", slot, got)
		}
	}
	if tr.TornReads() != 2 || tr.RecoveredRecords() != 0 {
		t.Fatalf("first tick: %d torn, %d recovered; want 2 and 0", tr.TornReads(), tr.RecoveredRecords())
	}
	// Slot 2's writer finished and another claimed it: a live claim, not a stuck one.
	tr.records.recs[2].Seq = 6*seqGen | 1<<1 | 1
	if !tr.loadRecord(1, &rec) || rec.Tid != 11 {
		t.Errorf("second tick: the record left claimed was not recovered: %+v", rec)
	}
	if got := tr.records.recs[1].Seq; got != 6*seqGen {
		t.Errorf("released seq %#x, want the next generation %#x", got, 6*seqGen)
	}
	if tr.loadRecord(2, &rec) {
		t.Error("second tick: a record claimed by a new write was read")
	}
	if tr.TornReads() != 3 || tr.RecoveredRecords() != 1 {
		t.Errorf("after the second tick: %d torn, %d recovered; want 3 and 1", tr.TornReads(), tr.RecoveredRecords())
	}
}

// TestSeqGenIsTheHeaders: seqGen restates seqclaim.h's TC_SEQ_GEN, which Go cannot import.
func TestSeqGenIsTheHeaders(t *testing.T) {
	h, err := os.ReadFile("seqclaim.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`#define TC_SEQ_CPU_BITS (\d+)`).FindSubmatch(h)
	if m == nil {
		t.Fatal("seqclaim.h defines no TC_SEQ_CPU_BITS")
	}
	bits, _ := strconv.Atoi(string(m[1]))
	if seqGen != 1<<(bits+1) {
		t.Errorf("seqGen is %#x; seqclaim.h's TC_SEQ_GEN is %#x", seqGen, 1<<(bits+1))
	}
}
