#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# What the rows of threads inside spans add to a recording: each threadcap binary given
# records PostgreSQL's threads (`processes: [postgres]`, so that nothing else running on
# the machine counts), with the default filter and `spans: [{preset: postgresql}]` at
# 1 Hz, while pgbench runs with 8 clients for SECONDS_EACH (default 60) on a throwaway
# cluster; prints its samples files' bytes, rows, rows in a span and the bytes per hour
# they come to. Give the binary from before and after a change to compare them in one run.
#
#   go build -o .bench/threadcap ./cmd/threadcap
#   sudo test/bench/span_rows_bytes.sh .bench/threadcap-before .bench/threadcap
set -eu
[ $# -gt 0 ] || { echo "usage: $0 THREADCAP_BINARY..." >&2; exit 2; }
secs=${SECONDS_EACH:-60}
. "$(dirname "$0")/pgcluster.sh"
n=0
for tc in "$@"; do
	n=$((n + 1))
	dir=$tmp/run$n
	printf 'dir: %s\nprocesses: [postgres]\nspans:\n  - preset: postgresql\n' "$dir" >"$tmp/run$n.yaml"
	"$(realpath "$tc")" run --config "$tmp/run$n.yaml" --hz 1 --log-level warn &
	daemon=$!
	sleep 3
	pgb -n -c 8 -j 2 -T "$secs" >/dev/null 2>&1
	kill "$daemon"
	wait "$daemon" || true
	daemon=
	bytes=$(cat "$dir"/threadcap_samples_*.csv | wc -c)
	rows=$(cat "$dir"/threadcap_samples_*.csv | grep -vc '^sample_time')
	col=$(head -1 "$(ls "$dir"/threadcap_samples_*.csv | head -1)" | tr ',' '\n' | grep -nx span | cut -d: -f1)
	inspan=$(cat "$dir"/threadcap_samples_*.csv | grep -v '^sample_time' |
		python3 -c "import csv,sys; print(sum(1 for r in csv.reader(sys.stdin) if r[$col-1]))")
	echo "$tc: $bytes bytes, $rows rows ($inspan in a span) in $((secs + 3)) s: $((bytes * 3600 / (secs + 3))) bytes an hour"
done
