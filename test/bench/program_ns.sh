#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# What each of threadcap's BPF programs costs per run while a command runs, from the
# kernel's own accounting (kernel.bpf_stats_enabled, on for the run and put back after):
# the daemon runs with its metrics endpoint on 127.0.0.1, and the change of
# threadcap_bpf_program_runs_total and _run_seconds_total over the command gives each
# program's ns per run and runs per second. The counting adds its own clock reads to every
# run (an empty program measures 50-55 ns with it on this VM), so compare programs and
# variants measured this way with each other.
#
#   go build -o .bench/threadcap ./cmd/threadcap
#   CGO_ENABLED=0 go build -o .bench/bench ./test/bench
#   sudo test/bench/program_ns.sh .bench/threadcap passive "" -- \
#       sh -c 'echo "run 3s" | .bench/bench workload pingpong'
#
# MODE is full or passive; HZ (default 1) the daemon's rate; CONFIG_FILE, if not empty, is added to the daemon's settings
# (for example stacks: {kernel: "off"}). The command can be any load: one of the bench's
# workloads as above, or pgbench against a running cluster.
set -euo pipefail
usage="usage: program_ns.sh THREADCAP full|passive CONFIG_FILE -- COMMAND [ARG...]"
tc=${1:?$usage} mode=${2:?$usage} extra=${3?$usage}
[ "${4:-}" = -- ] || { echo "$usage" >&2; exit 2; }
shift 4
addr=127.0.0.1:${PORT:-9465}
work=$(mktemp -d)
was=$(cat /proc/sys/kernel/bpf_stats_enabled)
daemon=
cleanup() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
	echo "$was" >/proc/sys/kernel/bpf_stats_enabled
	rm -rf "$work"
}
trap cleanup EXIT
{ [ -n "$extra" ] && cat "$extra"; printf 'metrics:\n  listen: %s\n' "$addr"; } >"$work/config.yaml"
"$tc" run --config "$work/config.yaml" --dir "$work/data" --hz "${HZ:-1}" --syscalls "$mode" --log-level warn &
daemon=$!
for _ in $(seq 100); do curl -sf "http://$addr/metrics" >/dev/null && break; sleep 0.1; done
sleep 1 # past the first tick and its seeding
echo 1 >/proc/sys/kernel/bpf_stats_enabled
curl -sf "http://$addr/metrics" >"$work/before"
start=$(date +%s.%N)
"$@"
secs=$(echo "$(date +%s.%N) - $start" | bc -l)
curl -sf "http://$addr/metrics" >"$work/after"
echo "$mode mode, $(printf %.1f "$secs") s:"
awk -v secs="$secs" '
	match($0, /^threadcap_bpf_program_(runs|run_seconds)_total\{program="[a-z_]+"\} /) {
		split($0, f, "\""); kind = ($0 ~ /_runs_total/) ? "runs" : "secs"
		v[FILENAME, kind, f[2]] = $NF; progs[f[2]] = 1
	}
	END {
		for (p in progs) {
			runs = v[ARGV[2], "runs", p] - v[ARGV[1], "runs", p]
			if (runs < 100) continue
			ns = (v[ARGV[2], "secs", p] - v[ARGV[1], "secs", p]) * 1e9 / runs
			printf "%-16s %6.0f ns/run %9.0f runs/s\n", p, ns, runs / secs
		}
	}' "$work/before" "$work/after" | sort
