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

echo "--- journal of threadcap.service"
journalctl -u threadcap --no-pager -o short-monotonic | tail -n 40
if [ "$failed" = 0 ]; then
	echo "threadcap-systemd-result: PASS"
else
	echo "threadcap-systemd-result: FAIL"
fi
