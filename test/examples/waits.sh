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
psql() { "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -X -q -A -t -c "$1" postgres; }
scene() { # $1: name; the scene's workload runs while this waits SECONDS_EACH
	from=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
	pgb -n -c 8 -j 2 -T "$secs" >/dev/null 2>&1
	to=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
	echo "== $1: threadcap report --from $from --to $to --where process=postgres --by span,state,syscall --top 8"
	"$tc" report --config "$tmp/threadcap.yaml" --from "$from" --to "$to" --where process=postgres --by span,state,syscall --top 8
	echo
}

# A lock pile-up: the writers queue behind a session that holds the branches table.
psql "BEGIN; LOCK TABLE pgbench_branches IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep($secs); COMMIT" >/dev/null &
sleep 0.5
scene "lock pile-up"
wait $!

# Checkpoints while pgbench writes: every dirty buffer is written and fsynced.
(end=$(($(date +%s) + secs)); while [ "$(date +%s)" -lt "$end" ]; do psql CHECKPOINT >/dev/null; sleep 2; done) &
scene "checkpoints"
wait $!

# CPU starvation: four spinners on the machine's CPUs beside the backends.
spinners=
for i in 1 2 3 4; do
	sh -c 'while :; do :; done' &
	spinners="$spinners $!"
done
scene "CPU starvation"
kill $spinners
