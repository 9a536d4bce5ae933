#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# What one span probe hit costs the thread that hits it: a loop calls two functions whose
# first instruction is a nop, as at a USDT site (the kernel emulates the nop, so a hit is
# one breakpoint trap and no single-step), each call a span's start (with a 53-byte
# string argument) or end, CALLS times; timed without threadcap, with a span on the two
# (text_arg on), and with a span without its text argument. Prints ns per hit (half a
# start-end pair), each the median of ROUNDS runs, interleaved. Needs root and cc.
# SITE=ret makes the two functions a bare ret, an instruction the kernel steps out of
# line instead of emulating, as at the entry of some functions.
#
#   go build -o .bench/threadcap ./cmd/threadcap
#   sudo test/bench/span_hit.sh .bench/threadcap
set -euo pipefail
. "$(dirname "$0")/median.sh"
tc=$(realpath "${1:?usage: span_hit.sh THREADCAP_BINARY}")
calls=${CALLS:-500000} rounds=${ROUNDS:-5} site=${SITE:-nop}
work=$(mktemp -d)
daemon=
cleanup() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/loop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* A nop, then ret: what a USDT site is to the kernel (sys/sdt.h emits a 1-byte nop). */
#ifdef BARE_RET
#define FIRST ""
#else
#define FIRST " nop\n"
#endif
__asm__(".text\n.globl site_start\n.type site_start,@function\nsite_start:\n" FIRST " ret\n"
	".globl site_end\n.type site_end,@function\nsite_end:\n" FIRST " ret\n");
void site_start(const char *query);
void site_end(void);
static char query[64] = "SELECT abalance FROM pgbench_accounts WHERE aid = 42;";
int main(int argc, char **argv)
{
	long n = atol(argv[1]);
	struct timespec a, b;
	volatile char touch;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		touch = query[i & 63]; /* the string is resident, as a server's query is */
		site_start(query);
		site_end();
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n / 2);
	return 0;
}
C
case $site in
nop) cc -O2 -o "$work/loop" "$work/loop.c" ;;
ret) cc -O2 -DBARE_RET -o "$work/loop" "$work/loop.c" ;;
*) echo "SITE is nop or ret" >&2; exit 2 ;;
esac
span() { # $1: extra line of the span
	printf 'dir: %s/data\nspans:\n  - name: q\n    binary: %s/loop\n    start: entry site_start\n    end: entry site_end\n%s\n' \
		"$work" "$work" "$1"
}
span "    text_arg: 1" >"$work/text.yaml"
span "" >"$work/notext.yaml"
run() { # $1: none, text or notext; prints ns per call of the loop
	if [ "$1" != none ]; then
		"$tc" run --config "$work/$1.yaml" --hz 1 --log-level warn &
		daemon=$!
		sleep 2
	fi
	"$work/loop" "$calls"
	if [ -n "$daemon" ]; then kill "$daemon"; wait "$daemon" || true; daemon=; fi
}
for r in $(seq "$rounds"); do
	for c in none text notext; do echo "$c $(run "$c")"; done
done >"$work/results"
none=$(awk '$1 == "none" { print $2 }' "$work/results" | median)
for c in text notext; do
	m=$(awk -v c=$c '$1 == c { print $2 }' "$work/results" | median)
	printf '%s: %.0f ns per hit (%.1f ns per call without threadcap)\n' "$c" "$(echo "$m - $none" | bc -l)" "$none"
done
