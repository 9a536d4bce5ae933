#!/bin/bash
# What block I/O tracking costs a QD1 O_DIRECT read loop: threadcap at 1 Hz with io on and
# with io off, alternated ROUNDS times (which of the two goes first alternates too, so that
# neither is always the one that reads the file after the other); each run times dd's 4 KiB
# O_DIRECT reads of a file on the disk under test. Prints reads/s per run, the per-pair
# ratios (on / off) and their median.
#   sudo test/bench/io_direct_pairs.sh .bench/threadcap [FILE]
# FILE (default /var/tmp/threadcap-io-bench.dat, 256 MiB, made once) decides the disk.
set -euo pipefail
. "$(dirname "$0")/median.sh"
bin=${1:?usage: io_direct_pairs.sh THREADCAP_BINARY [FILE]}
file=${2:-/var/tmp/threadcap-io-bench.dat}
rounds=${ROUNDS:-8} reads=${READS:-30000}
[ -f "$file" ] || dd if=/dev/urandom of="$file" bs=1M count=256 status=none
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { # $1: io true|false; prints reads/s
	rm -rf "$work/data"
	printf 'io: %s\n' "$1" >"$work/cfg.yaml"
	"$bin" run --config "$work/cfg.yaml" --dir "$work/data" --hz 1 >"$work/log" 2>&1 &
	local pid=$! s e
	sleep 1.5 # started and attached
	s=$(date +%s.%N)
	dd if="$file" of=/dev/null bs=4k count="$reads" iflag=direct status=none
	e=$(date +%s.%N)
	kill -TERM "$pid"
	wait "$pid"
	echo "$reads / ($e - $s)" | bc -l
}
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		on=$(run true)
		off=$(run false)
	else
		off=$(run false)
		on=$(run true)
	fi
	ratio=$(echo "$on / $off" | bc -l)
	echo "$ratio" >>"$work/ratios"
	printf 'round %d: io on %.0f reads/s, io off %.0f reads/s, ratio %.3f\n' "$r" "$on" "$off" "$ratio"
done
printf 'median ratio %.3f (range %.3f-%.3f) over %d pairs\n' "$(median <"$work/ratios")" \
	"$(sort -n "$work/ratios" | head -1)" "$(sort -n "$work/ratios" | tail -1)" "$(wc -l <"$work/ratios")"
