#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# What three kinds of slow look like to a DBA: threadcap (the binary given) records a
# throwaway PostgreSQL cluster with the postgresql span preset, the default filter, at
# 10 Hz, through three scenes of SECONDS_EACH (default 15) under pgbench -c 8: a lock
# pile-up (a session holds ACCESS EXCLUSIVE on pgbench_branches), checkpoints while
# pgbench writes (CHECKPOINT every 2 s, with full_page_writes and fsync on), and CPU
# starvation of the queries (4 spinners beside them, more than the CPUs). Prints
# `threadcap report --where process=postgres --by span,state,syscall` for each scene's
# window: README's examples.
#
#   go build -o .bench/threadcap ./cmd/threadcap
#   sudo test/examples/waits.sh .bench/threadcap
set -eu
tc=$(realpath "${1:?usage: $0 THREADCAP_BINARY}")
secs=${SECONDS_EACH:-15}
SCALE=${SCALE:-10}
. "$(dirname "$0")/../bench/pgcluster.sh"
printf 'dir: %s/data\nspans:\n  - preset: postgresql\n' "$tmp" >"$tmp/threadcap.yaml"
"$tc" run --config "$tmp/threadcap.yaml" --hz 10 --log-level warn &
daemon=$!
sleep 3
scene() { # $1: name; $2: what runs beside pgbench, from a second after it starts
	from=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
	pgb -n -c 8 -j 2 -T "$secs" >/dev/null 2>&1 &
	bench=$!
	# pgbench reads the scale from pgbench_branches as it starts: a lock taken before
	# would hold up pgbench itself, not its clients' transactions.
	sleep 1
	sh -c "$2" &
	beside=$!
	wait "$bench"
	kill "$beside" 2>/dev/null || true
	wait "$beside" 2>/dev/null || true
	to=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
	echo "== $1: threadcap report --from $from --to $to --where process=postgres --by span,state,syscall --top 8"
	"$tc" report --config "$tmp/threadcap.yaml" --from "$from" --to "$to" --where process=postgres --by span,state,syscall --top 8
	echo
}
psql="$bin/psql -h 127.0.0.1 -p $port -U postgres -X -q -A -t postgres -c"

# A lock pile-up: the clients' transactions queue behind a session holding the branches.
scene "lock pile-up" "$psql 'BEGIN; LOCK TABLE pgbench_branches IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep($((secs - 3))); COMMIT' >/dev/null"

# Checkpoints while pgbench writes: every dirty buffer is written and fsynced.
scene "checkpoints" "while :; do $psql CHECKPOINT >/dev/null; sleep 2; done"

# CPU starvation: four spinners on the machine's CPUs beside the backends.
spinners=
for i in 1 2 3 4; do
	sh -c 'while :; do :; done' &
	spinners="$spinners $!"
done
scene "CPU starvation" "sleep $secs"
kill $spinners
