#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# What the postgresql span presets cost PostgreSQL: pgbench's TPS with no tracer (none),
# with threadcap without spans (nospans), with threadcap and `spans: [{preset:
# postgresql}]` (preset), with postgresql_buffers too (buffers: buffer_read's probes fire
# at every buffer access, hits included), and without spans and with kernel stacks off
# (nostacks: what the default stack walk at each entry into D costs), interleaved in every
# round (the order rotates), on a throwaway cluster in a temp dir. Needs root and
# PostgreSQL (make install-postgres). Prints one line per run and, per configuration, the
# median TPS and the median of its per-round ratios to nospans, with their range.
#
#   go build -o .bench/threadcap ./cmd/threadcap
#   sudo ROUNDS=5 SECONDS_EACH=20 test/bench/pgbench_spans.sh .bench/threadcap
#
# CONFIGS picks the configurations (default: "none nospans preset buffers"; the ratios
# need nospans). More rounds of fewer configurations pair the runs closer in time, which
# is what a noisy machine needs. PGOPTIONS_SERVER adds server options, e.g. "-c
# synchronous_commit=off": commits then wait for no disk flush and pgbench is CPU-bound,
# the case where a tracer's cost shows most.
set -eu
. "$(dirname "$0")/median.sh"
tc=$(realpath "${1:?usage: $0 THREADCAP_BINARY}")
rounds=${ROUNDS:-5}
secs=${SECONDS_EACH:-20}
. "$(dirname "$0")/pgcluster.sh"
printf 'dir: %s/preset\nspans:\n  - preset: postgresql\n' "$tmp" >"$tmp/preset.yaml"
printf 'dir: %s/nostacks\nstacks:\n  kernel: "off"\n' "$tmp" >"$tmp/nostacks.yaml"
printf 'dir: %s/buffers\nspans:\n  - preset: postgresql\n  - preset: postgresql_buffers\n' "$tmp" >"$tmp/buffers.yaml"

run() { # $1: none, nospans, preset, buffers or nostacks; prints the TPS
	case $1 in
	nospans) "$tc" run --config "" --dir "$tmp/nospans" --log-level warn & daemon=$! ;;
	preset | buffers | nostacks) "$tc" run --config "$tmp/$1.yaml" --log-level warn & daemon=$! ;;
	esac
	sleep 3
	if [ -n "$daemon" ] && ! kill -0 "$daemon" 2>/dev/null; then
		echo "threadcap run ($1) exited before the measurement" >&2
		exit 1
	fi
	pgb -n -c 4 -j 2 -T "$secs" 2>/dev/null | awk '/^tps/ { print $3; exit }'
	if [ -n "$daemon" ]; then kill "$daemon"; wait "$daemon" || true; daemon=; fi
}

configs=${CONFIGS:-none nospans preset buffers}
set -- $configs
for r in $(seq 1 "$rounds"); do
	for c in "$@"; do
		echo "$r $c $(run "$c")"
	done
	first=$1
	shift
	set -- "$@" "$first" # rotate the order
done | tee "$tmp/results"
for c in $configs; do
	tps=$(awk -v c="$c" '$2 == c { print $3 }' "$tmp/results" | median)
	ratios=$(awk -v c="$c" '$2 == "nospans" { base[$1] = $3 } $2 == c { tps[$1] = $3 }
		END { for (r in tps) if (base[r] > 0) printf "%.3f\n", tps[r] / base[r] }' "$tmp/results" | sort -n)
	echo "$c: median $tps TPS; vs nospans $(echo "$ratios" | median) (range $(echo "$ratios" | head -1)-$(echo "$ratios" | tail -1))"
done
