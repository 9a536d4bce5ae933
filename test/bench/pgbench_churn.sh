#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# What threadcap costs, and loses, where a database's clients connect and disconnect: a
# pgbench that opens a connection per transaction (-C, a backend process each; each
# closed connection leaves a socket in TIME_WAIT for 60 s) beside the daemon at 10 Hz
# with the postgresql span preset, for each binary given, taking turns in every round,
# on a throwaway cluster. Prints per run the daemon's CPU (user + system seconds a
# second of the run), pgbench's TPS and the spans the daemon lost (its stop line's
# span_starts_lost). Needs root and PostgreSQL (make install-postgres).
#
#   git stash; go build -o .bench/before ./cmd/threadcap; git stash pop
#   go build -o .bench/threadcap ./cmd/threadcap
#   sudo ROUNDS=3 SECONDS_EACH=30 test/bench/pgbench_churn.sh .bench/before .bench/threadcap
#
# MODE is the syscall mode (full, passive or tick; default full).
set -euo pipefail
. "$(dirname "$0")/median.sh"
[ $# -ge 1 ] || { echo "usage: $0 THREADCAP_BINARY..." >&2; exit 2; }
bins=()
for b in "$@"; do bins+=("$(realpath "$b")"); done
rounds=${ROUNDS:-3} secs=${SECONDS_EACH:-30} mode=${MODE:-full}
. "$(dirname "$0")/pgcluster.sh"
printf 'dir: %s/out\nsyscalls: %s\nhz: 10\nspans:\n  - preset: postgresql\n' "$tmp" "$mode" >"$tmp/config.yaml"

cpu_s() { # $1: pid; its user + system CPU seconds
	awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}
run() { # $1: binary; prints CPU a second, TPS, spans lost
	rm -rf "$tmp/out"
	"$1" run --config "$tmp/config.yaml" --log-level info 2>"$tmp/daemon.log" &
	daemon=$!
	sleep 3
	local before tps after
	before=$(cpu_s "$daemon")
	tps=$(pgb -n -C -c 4 -j 2 -T "$secs" 2>/dev/null | awk '/^tps/ { print $3; exit }')
	after=$(cpu_s "$daemon")
	kill "$daemon"
	wait "$daemon" || true
	daemon=
	local lost
	lost=$(grep -o 'span_starts_lost=[0-9]*' "$tmp/daemon.log" | cut -d= -f2)
	echo "$(echo "($after - $before) / $secs" | bc -l) $tps ${lost:-?}"
}
for r in $(seq "$rounds"); do
	for i in "${!bins[@]}"; do
		echo "$r $i $(run "${bins[$i]}")"
	done
done | tee "$tmp/results" | awk '{ printf "round %s %s: %.3f CPU, %s TPS, %s spans lost\n", $1, $2, $3, $4, $5 }'
for i in "${!bins[@]}"; do
	cpu=$(awk -v i="$i" '$2 == i { print $3 }' "$tmp/results" | median)
	tps=$(awk -v i="$i" '$2 == i { print $4 }' "$tmp/results" | median)
	printf '%s: median %.3f of a CPU, %s TPS\n' "${bins[$i]}" "$cpu" "$tps"
done
