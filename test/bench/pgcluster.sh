# SPDX-License-Identifier: Apache-2.0
#
# Sourced by the benchmarks that run PostgreSQL: a throwaway cluster in a temp dir on a
# free port of 127.0.0.1, stopped and removed at exit (with the daemon in $daemon, if
# any), initialized for pgbench at scale ${SCALE:-10}. Sets tmp, port, bin and pgb (pgbench
# against it). Needs root and PostgreSQL (make install-postgres).
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
tmp=$(mktemp -d /tmp/threadcap-pgbench-XXXXXX)
chown postgres "$tmp"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
daemon=
stop() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
	runuser -u postgres -- "$bin/pg_ctl" -D "$tmp/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap stop EXIT INT TERM
runuser -u postgres -- "$bin/initdb" -D "$tmp/data" -U postgres -A trust --no-sync >/dev/null
runuser -u postgres -- "$bin/pg_ctl" -D "$tmp/data" -l "$tmp/log" -w \
	-o "-p $port -k $tmp -c listen_addresses=127.0.0.1 ${PGOPTIONS_SERVER:-}" start >/dev/null
pgb() { "$bin/pgbench" -h 127.0.0.1 -p "$port" -U postgres "$@" postgres; }
pgb -i -q -s "${SCALE:-10}" >/dev/null 2>&1
