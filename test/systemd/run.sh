#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# threadcap's unit under a real systemd: boots a Debian root (debootstrap, cached) with
# systemd-nspawn --boot, systemd as its PID 1 and this machine's kernel, so the programs
# load at full speed. threadcap is installed there by `make install-files` as a user's
# `make install` does, and test/systemd/inside.sh, started by that systemd, drives it with
# systemctl and checks what it leaves, and the cgroups of units it starts as a threadcap
# outside the container names them. Needs root.
#
# Environment: SYSTEMD_CACHE (the debootstrapped root, kept between runs), SYSTEMD_BUILD
# (the container's copy and the logs), MIRROR (default: the Debian mirror apt uses).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
	[ "${CI:-}" = true ] && { echo "test-systemd: needs root, and CI=true" >&2; exit 1; }
	echo "test-systemd: SKIP: needs root (boots a container)"
	exit 0
fi
cache=${SYSTEMD_CACHE:-/var/cache/threadcap-test}
build=${SYSTEMD_BUILD:-$PWD/.systemd}
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
# -v2: systemd-container added (nspawn and machined inside, for a machine of its own).
base=$cache/rootfs-$suite-v2
mkdir -p "$cache" "$build"

# The base root, made once: debootstrap takes about a minute. systemd-container gives the
# container its own systemd-nspawn and systemd-machined, for a machine started inside it.
if [ ! -x "$base/lib/systemd/systemd" ]; then
	. test/debian.sh
	mirror=$(debian_mirror)
	rm -rf "$base.tmp"
	debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,systemd-container "$suite" "$base.tmp" "$mirror" >"$build/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$build/debootstrap.log" >&2; exit 1; }
	rm -rf "$base" && mv "$base.tmp" "$base"
fi

# Each run starts from a fresh copy, with threadcap installed as make install does.
root=$build/root
rm -rf "$root" "$build/results"
cp -a "$base" "$root"
mkdir -p "$build/results"
go build -buildvcs=auto -o "$build/threadcap" ./cmd/threadcap
make --no-print-directory -s install-files BIN="$build/threadcap" DESTDIR="$root" PREFIX=/usr/local
cat >"$root/etc/systemd/system/threadcap-systemd-test.service" <<'UNIT'
[Unit]
Description=threadcap's systemd test (test/systemd/inside.sh)
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/bin/sh -c '/threadcap-test/inside.sh >/threadcap-test/results/log 2>&1; systemctl poweroff --no-block'
UNIT
ln -s /etc/systemd/system/threadcap-systemd-test.service \
	"$root/etc/systemd/system/multi-user.target.wants/threadcap-systemd-test.service"

# Without --system-call-filter=bpf, nspawn's seccomp filter refuses bpf(2) with EPERM even
# to root: check must say where to look.
out=$(systemd-nspawn --quiet --directory="$root" --register=no --keep-unit --capability=CAP_BPF,CAP_PERFMON \
	/usr/local/bin/threadcap check --config "" --dir /tmp/data </dev/null 2>&1 || true)
if ! grep -q 'FAIL  bpf programs .*a seccomp filter refuses bpf(2)' <<<"$out"; then
	echo "$out"
	echo "test-systemd: FAIL: check in a container that refuses bpf(2) does not point at seccomp" >&2
	exit 1
fi

# A threadcap on this machine, outside the container, names the cgroups of the workloads
# inside.sh starts there (a machine of the container's own machined, a service, a scope):
# the one inside cannot, as the kernel side records this machine's pids and the
# container's /proc has its own. inside.sh reads its files, bound read-only.
host=$build/host
rm -rf "$host"
"$build/threadcap" run --config "" --dir "$host" --hz 1 >"$build/host.log" 2>&1 &
hostpid=$!
trap 'kill "$hostpid" 2>/dev/null || true' EXIT
for _ in $(seq 150); do
	ls "$host"/threadcap_ticks_*.csv >/dev/null 2>&1 && break
	kill -0 "$hostpid" 2>/dev/null || break
	sleep 0.2
done
ls "$host"/threadcap_ticks_*.csv >/dev/null 2>&1 ||
	{ cat "$build/host.log" >&2; echo "test-systemd: FAIL: threadcap outside the container wrote no tick" >&2; exit 1; }

# --keep-unit and --register=no: no systemd runs this machine to ask for a scope. nspawn's
# own seccomp filter fails bpf(2) with EPERM unless it is allowed, and of the capabilities
# the unit grants it drops CAP_BPF and CAP_PERFMON unless they are added.
start=$(date +%s)
timeout 300 systemd-nspawn --quiet --boot --directory="$root" --register=no --keep-unit \
	--capability=CAP_BPF,CAP_PERFMON --system-call-filter=bpf \
	--bind-ro="$PWD/test/systemd/inside.sh:/threadcap-test/inside.sh" \
	--bind-ro="$host:/threadcap-test/host" \
	--bind="$build/results:/threadcap-test/results" </dev/null >"$build/console.log" 2>&1 || true
took=$(($(date +%s) - start))
kill "$hostpid" && wait "$hostpid" || { tail -n 20 "$build/host.log" >&2; echo "test-systemd: FAIL: threadcap outside the container did not stop cleanly" >&2; exit 1; }
log=$build/results/log
cat "$log" 2>/dev/null || { echo "the container wrote no results; its console:" >&2; tail -n 60 "$build/console.log" >&2; }
echo "test-systemd: booted, tested and powered off in ${took}s"
grep -q '^threadcap-systemd-result: PASS' "$log"
