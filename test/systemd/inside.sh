#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs as root inside the systemd-nspawn container of run.sh, started by systemd (PID 1)
# once the container has booted, against threadcap as `make install` installed it. Each
# step prints "ok:" or "FAIL:"; the last line says "threadcap-systemd-result: PASS" or
# "FAIL". The container powers off after it.
set -u
failed=0
ok() { echo "ok:   $*"; }
fail() {
	echo "FAIL: $*"
	failed=1
}
# waitfor WHAT SECONDS COMMAND...: polls COMMAND until it succeeds or SECONDS pass.
waitfor() {
	local what=$1 limit=$2
	shift 2
	for _ in $(seq $((limit * 5))); do
		"$@" && { ok "$what"; return 0; }
		sleep 0.2
	done
	fail "$what (not within ${limit}s)"
	return 1
}
conf=/etc/threadcap/threadcap.yaml
data=/var/lib/threadcap

# systemd-sysusers ran at boot, from the sysusers.d entry make install put in place.
if IFS=: read -r _ _ uid gid _ home shell < <(getent passwd threadcap); then
	[ "$uid" -lt 1000 ] && ok "sysusers: system user threadcap (uid $uid)" || fail "threadcap's uid $uid is not a system uid"
	[ "$home" = "$data" ] && ok "its home is $data" || fail "its home is $home, want $data"
	[ "$(getent group threadcap | cut -d: -f3)" = "$gid" ] && ok "its group is threadcap" || fail "its group $gid is not threadcap"
else
	fail "sysusers: no user threadcap"
fi
systemctl is-active --quiet systemd-sysusers.service && ok "systemd-sysusers.service ran" ||
	fail "systemd-sysusers.service: $(systemctl is-active systemd-sysusers.service)"

# start returns once threadcap has sent READY=1: it is active at once, and rows follow.
sed -i 's/^hz: .*/hz: 1/' "$conf"
if systemctl start threadcap; then
	ok "systemctl start threadcap returned"
else
	fail "systemctl start threadcap: $?"
fi
state=$(systemctl show -p ActiveState,SubState --value threadcap | paste -sd/)
[ "$state" = active/running ] && ok "active when start returns" || fail "state $state when start returns, want active/running"
pid=$(systemctl show -p MainPID --value threadcap)
if [ "$pid" != 0 ]; then
	[ "$(stat -c %U /proc/"$pid")" = threadcap ] && ok "runs as threadcap" || fail "runs as $(stat -c %U /proc/"$pid")"
	# CAP_DAC_READ_SEARCH (2), CAP_SYS_PTRACE (19), CAP_PERFMON (38), CAP_BPF (39).
	caps=$(sed -n 's/^CapEff:\t//p' /proc/"$pid"/status)
	[ "$caps" = 000000c000080004 ] && ok "capabilities are the unit's four" || fail "effective capabilities $caps, want 000000c000080004"
	# READY=1 comes once the programs are attached: they are when start returns.
	links=$(ls -l /proc/"$pid"/fd | grep -c 'anon_inode:bpf_link' || true)
	[ "$links" -gt 0 ] && ok "$links programs attached when start returns" || fail "no program attached when start returns"
fi
has_rows() { [ "$(cat "$data"/threadcap_samples_*.csv 2>/dev/null | tail -n +2 | grep -c .)" -gt 0 ]; }
waitfor "rows are being written" 60 has_rows

# reload applies a changed rate: ticks come 0.2 s apart after it.
ticks() { cat "$data"/threadcap_ticks_*.csv 2>/dev/null | tail -n +2 | while read -r t; do date -d "$t" +%s.%N; done; }
# The first tick is taken at start, the next at the first whole interval: only later ones
# are an interval apart.
closer() { ticks | awk -v after="$1" 'NR > 2 && prev > after && $1 - prev < 0.5 { found = 1 } { prev = $1 } END { exit !found }'; }
three_ticks() { [ "$(ticks | wc -l)" -ge 3 ]; }
waitfor "three ticks at hz 1" 30 three_ticks
closer 0 && fail "ticks less than 0.5 s apart at hz 1"
sed -i 's/^hz: .*/hz: 5/' "$conf"
reloaded=$(date +%s.%N)
systemctl reload threadcap && ok "systemctl reload threadcap returned" || fail "systemctl reload threadcap: $?"
journalctl -u threadcap --no-pager -o cat | grep -q 'msg="config reloaded".*changed="\?\[hz\]' &&
	ok "the journal says hz changed" || fail "no 'config reloaded' with changed=[hz] in the journal"
waitfor "ticks 0.2 s apart after the reload" 60 closer "$reloaded"

# stop leaves complete files, owned by threadcap, with the documented modes.
systemctl stop threadcap && ok "systemctl stop threadcap returned" || fail "systemctl stop threadcap: $?"
result=$(systemctl show -p Result,ExecMainStatus --value threadcap | paste -sd/)
[ "$result" = success/0 ] && ok "exited cleanly" || fail "result/exit status $result, want success/0"
[ "$(stat -c %U:%G:%a "$data")" = threadcap:threadcap:750 ] && ok "$data is threadcap's, mode 750" ||
	fail "$data: $(stat -c %U:%G:%a "$data"), want threadcap:threadcap:750"
files=0
for f in "$data"/*; do
	[ -f "$f" ] || continue
	files=$((files + 1))
	got=$(stat -c %U:%G:%a "$f")
	[ "$got" = threadcap:threadcap:640 ] || fail "$f: $got, want threadcap:threadcap:640"
	case $f in
	*.gz) gzip -t "$f" || fail "$f is not a complete gzip file" ;;
	*.csv)
		[ -z "$(tail -c1 "$f")" ] || fail "$f ends inside a line"
		awk -F, 'NR == 1 { n = NF } NF < n { bad = 1 } END { exit bad }' "$f" || fail "$f has a short line"
		;;
	esac
done
[ "$files" -gt 0 ] && ok "$files files, each complete, threadcap's and mode 640" || fail "no files in $data"
for kind in samples ticks; do
	ls "$data"/threadcap_${kind}_*.csv >/dev/null 2>&1 || fail "no $kind file in $data"
done

# Nothing outside the state directory is writable: a dir elsewhere makes start fail.
sed -i 's|^dir: .*|dir: /srv/threadcap|' "$conf"
if systemctl start threadcap; then
	fail "started with dir /srv/threadcap, outside its state directory"
else
	ok "start with dir /srv/threadcap fails"
fi
systemctl stop threadcap
[ ! -e /srv/threadcap ] && ok "/srv/threadcap was not created" || fail "/srv/threadcap was created"
journalctl -u threadcap --no-pager -o cat | grep -q 'read-only file system' &&
	ok "the journal says read-only file system" || fail "the journal does not say why /srv/threadcap failed"

# Real units' cgroups, named by threadcap outside the container (run.sh), whose rows are
# in /threadcap-test/host: a machine systemd-machined registers (machine.slice), a service
# and a scope. The one inside records this machine's pids, not the container's, so its
# /proc cannot tell it their cgroups. Each runs a sleep of its own length, to find its rows
# by cmdline; the machine's root is a directory with this one's /usr bound read-only.
host=/threadcap-test/host
machine=tc-test # a dash, which systemd escapes in the scope's name: machine-tc\x2dtest.scope
mroot=/tmp/tc-machine
mkdir -p "$mroot/etc" "$mroot/usr"
cp /usr/lib/os-release "$mroot/etc/os-release"
for d in bin sbin lib lib64; do ln -sfn "usr/$d" "$mroot/$d"; done
systemd-nspawn --quiet --register=yes --machine="$machine" --directory="$mroot" --bind-ro=/usr \
	/bin/sleep 3601 </dev/null >/tmp/tc-machine.log 2>&1 &
nspawn=$!
systemd-run --quiet --unit=tc-unit-test.service /bin/sleep 3602 || fail "systemd-run --unit=tc-unit-test.service: $?"
systemd-run --quiet --scope /bin/sleep 3603 </dev/null >/dev/null 2>&1 &
scope=$! # systemd-run --scope execs the command in the scope it made
leader() { leader=$(machinectl show -p Leader --value "$machine" 2>/dev/null) && [ -n "$leader" ] && [ "$leader" != 0 ]; }
waitfor "machine $machine registered by systemd-machined" 30 leader || cat /tmp/tc-machine.log
# cgroup_of PID: its cgroup v2 path, as this container sees it.
cgroup_of() { sed -n 's/^0:://p' /proc/"$1"/cgroup 2>/dev/null; }
service=$(systemctl show -p MainPID --value tc-unit-test.service)
scopeunit=$(cgroup_of "$scope")
scopeunit=${scopeunit##*/}
# host_rows CMDLINE: "container|pod_uid|unit|cgroup" of each complete row of the sleep with
# that command line in the files of threadcap outside; the header names the columns.
host_rows() {
	awk -F, -v cmd="$1" 'FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; n = NF; next }
		NF == n && $c["thread"] == "sleep" && $c["cmdline"] == cmd {
			print $c["container"] "|" $c["pod_uid"] "|" $c["unit"] "|" $c["cgroup"] }' \
		"$host"/threadcap_samples_*.csv 2>/dev/null | sort -u
}
all_seen() { for n in 1 2 3; do [ -n "$(host_rows "/bin/sleep 360$n")" ] || return 1; done; }
waitfor "rows of the three sleeps outside" 30 all_seen
# check WHAT PID CMDLINE CONTAINER UNIT: the rows of that sleep say its container and unit,
# no pod, and the cgroup path the container shows, under this container's own.
check() {
	local what=$1 pid=$2 cmd=$3 want_c=$4 want_u=$5 path rows
	path=$(cgroup_of "$pid")
	echo "      $what: pid $pid, /proc/$pid/cgroup here: 0::$path"
	rows=$(host_rows "$cmd")
	echo "$rows" | sed "s/^/      $what: row outside (container|pod_uid|unit|cgroup): /"
	if [ "$rows" = "$want_c||$want_u|${rows##*|}" ] && [ -n "$path" ] && [[ ${rows##*|} == *"$path" ]]; then
		ok "$what: container '$want_c', unit '$want_u', its cgroup"
	else
		fail "$what: rows say $rows, want container '$want_c', no pod, unit '$want_u', a cgroup ending in $path"
	fi
}
check "machine $machine" "$leader" "/bin/sleep 3601" "nspawn:$machine" 'machine-tc\x2dtest.scope'
check "tc-unit-test.service" "$service" "/bin/sleep 3602" "" tc-unit-test.service
[[ $scopeunit == run-*.scope ]] || fail "systemd-run --scope ran in $scopeunit, not a run-*.scope"
check "systemd-run --scope" "$scope" "/bin/sleep 3603" "" "$scopeunit"
# Stopped before poweroff, and checked gone: machinectl terminate kills the machine's
# processes (the sleep, its PID 1, ignores SIGTERM) and nspawn exits.
machinectl terminate "$machine" || fail "machinectl terminate $machine: $?"
systemctl stop tc-unit-test.service
kill "$scope"
gone() { ! kill -0 "$nspawn" 2>/dev/null && [ -z "$(machinectl list --no-legend)" ]; }
waitfor "machine $machine gone" 30 gone
wait

echo "--- journal of threadcap.service"
journalctl -u threadcap --no-pager -o short-monotonic | tail -n 40
if [ "$failed" = 0 ]; then
	echo "threadcap-systemd-result: PASS"
else
	echo "threadcap-systemd-result: FAIL"
fi
