/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Who may write a record, and how a reader knows it read one whole: the record's seq is a
 * claim, not a counter. Shared by threadcap.bpf.c and test/seqclaim, which runs these very
 * functions on host threads and signal handlers to check every interleaving they allow.
 *
 * seq's bit 0 is set while a write is in progress; bits 1..TC_SEQ_CPU_BITS then name the
 * CPU writing; the bits above are a generation, one up per write. A writer claims a record
 * with a compare-and-exchange from an even seq to odd, and releases it with the next
 * generation, even. Two writers therefore never overlap, whatever context each runs in:
 *
 *   - another CPU holds the claim (a repair of an unseen switch made from the CPU the
 *     thread left, while the thread comes back in elsewhere; a wakeup; a rename made by
 *     another thread): a writer that must not lose its write (the thread's own events)
 *     waits for it, TC_CLAIM_WAIT loops at most, then gives up and counts
 *     TC_WRITE_CONFLICTS; a repair or refresh (TC_CLAIM_TRY) backs off at once, as the
 *     owner's own write supersedes it;
 *   - this CPU holds the claim: the writer interrupted a write of the same record (a timer
 *     or a wakeup in hard interrupt context, inside a syscall program). Waiting would never
 *     end, so it backs off; the interrupted write completes as if nothing had happened.
 *
 * A reader copies a record while seq is even and takes the copy only if seq is the same
 * after it; as no write begins or ends without moving seq, such a copy is whole.
 */
#ifndef __THREADCAP_SEQCLAIM_H__
#define __THREADCAP_SEQCLAIM_H__

#define TC_SEQ_CPU_BITS 13 /* CPUs 0..8191: nr_cpu_ids is at most 8192 */
#define TC_SEQ_CPU_MASK ((1U << TC_SEQ_CPU_BITS) - 1)
#define TC_SEQ_GEN (1U << (TC_SEQ_CPU_BITS + 1))

/* How long a writer waits for another CPU's write: each try is one compare-and-exchange,
 * tens of ns on a contended line; a write takes well under a microsecond. */
#define TC_CLAIM_TRIES 4096

enum tc_claim_mode {
	TC_CLAIM_TRY = 0,  /* repairs and refreshes: back off if anyone is writing */
	TC_CLAIM_WAIT = 1, /* the thread's own events: wait for another CPU's writer */
};

static __always_inline __u32 seq_writer(__u32 seq)
{
	return (seq >> 1) & TC_SEQ_CPU_MASK;
}

/* One try: the claimed seq (odd, never 0) from the even seq s, or 0. */
static __always_inline __u32 seq_try(__u32 *seq, __u32 s, __u32 cpu)
{
	__u32 claimed = s | ((cpu & TC_SEQ_CPU_MASK) << 1) | 1;

	if (s & 1)
		return 0;
	if (__sync_val_compare_and_swap(seq, s, claimed) != s)
		return 0;
	return claimed;
}

struct seq_wait {
	__u32 *seq;
	__u32 cpu;
	__u32 claimed;
};

/* A step of the wait: 1 (stop) once claimed, or once the writer is this CPU's own. */
static long seq_wait_step(__u64 i, void *data)
{
	struct seq_wait *w = data;
	__u32 s = *(volatile __u32 *)w->seq;

	if ((s & 1) && seq_writer(s) == w->cpu)
		return 1;
	w->claimed = seq_try(w->seq, s, w->cpu);
	return w->claimed != 0;
}

/*
 * Claims the write of the record whose seq this is, from CPU cpu. Returns the claimed
 * seq, to give to seq_release, or 0 when the record was not claimed and must not be
 * written.
 */
static __always_inline __u32 seq_claim(__u32 *seq, __u32 cpu, enum tc_claim_mode mode)
{
	struct seq_wait w = { .seq = seq, .cpu = cpu };
	__u32 s = *(volatile __u32 *)seq;

	w.claimed = seq_try(seq, s, cpu);
	if (w.claimed || mode == TC_CLAIM_TRY)
		return w.claimed;
	if ((s & 1) && seq_writer(s) == cpu)
		return 0;
	bpf_loop(TC_CLAIM_TRIES, seq_wait_step, &w, 0);
	return w.claimed;
}

/*
 * Ends the write claimed as claimed: the next generation, even. Only the claimant stores
 * to seq while it is odd, so a store suffices, ordered after the write's own stores: on
 * x86 stores are seen in program order and a compiler barrier is enough; arm64 may
 * reorder them, so there an exchange, which is fully ordered.
 */
static __always_inline void seq_release(__u32 *seq, __u32 claimed)
{
	__u32 next = (claimed & ~(TC_SEQ_GEN - 1)) + TC_SEQ_GEN;

#if defined(__TARGET_ARCH_arm64) || defined(__aarch64__)
	(void)__sync_lock_test_and_set(seq, next);
#else
	asm volatile("" ::: "memory");
	*(volatile __u32 *)seq = next;
#endif
}

#endif /* __THREADCAP_SEQCLAIM_H__ */
