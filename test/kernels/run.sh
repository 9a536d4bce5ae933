#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The kernel matrix: boots each Debian release's kernel under qemu's emulation (this
# machine's /dev/kvm cannot boot a stock kernel) from a busybox initramfs that carries
# threadcap and its kernel tests, and reports per kernel whether it did what is expected:
# load, attach and record correctly, or, for a kernel older than the minimum, refuse
# clearly. Kernels are fetched with apt-get download and extracted, never installed.
#
# Usage: run.sh SUITE:EXPECT...   (EXPECT: supported or refused)
# Environment: KERNEL_CACHE (fetched kernels, kept between runs), KERNEL_BUILD (initramfs
# and console logs), MIRROR (default: the Debian mirror apt is configured with).
set -euo pipefail
cd "$(dirname "$0")/../.."
cache=${KERNEL_CACHE:-/var/cache/threadcap-test/kernels}
build=${KERNEL_BUILD:-$PWD/.kernels}
mkdir -p "$cache" "$build"

. test/debian.sh
mirror=$(debian_mirror)

# What runs in the guest: static binaries, as the initramfs has no libraries.
root=$build/initramfs
rm -rf "$root"
mkdir -p "$root"/{bin,proc,sys,dev,tmp}
cp /bin/busybox "$root/bin/busybox"
CGO_ENABLED=0 go build -o "$root/bin/threadcap" ./cmd/threadcap
CGO_ENABLED=0 go test -c -o "$root/bin/bpf.test" ./bpf
CGO_ENABLED=0 go test -c -o "$root/bin/sampler.test" ./sampler
cc -O1 -static -o "$root/bin/vfork_parent" test/workload/vfork_parent.c
cc -O1 -static -o "$root/bin/spanwork" test/workload/spanwork.c
cp test/kernels/guest-init "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) >"$build/initramfs.cpio"

# kernel SUITE prints the path of the suite's current kernel, fetched into the cache once.
# Each suite has its own apt state, so the host's apt configuration is left as it is.
kernel() {
	local suite=$1 state=$cache/apt-$1 image dir
	mkdir -p "$state/lists/partial" "$state/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$state/sources.list"
	local apt=(-o Dir::Etc::SourceList="$state/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$state/lists" -o Dir::Cache="$state" -o Dir::State::Status=/dev/null
		-o APT::Sandbox::User=root)
	apt-get "${apt[@]}" update -qq >&2
	image=$(apt-cache "${apt[@]}" depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[^ ]*-amd64\)$/\1/p' | head -n1)
	[ -n "$image" ] || { echo "$suite: no linux-image-amd64 in $mirror" >&2; return 1; }
	dir=$cache/$image
	if [ ! -f "$dir/vmlinuz" ]; then
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
		(cd "$dir.tmp" && apt-get "${apt[@]}" download -qq "$image" >&2)
		dpkg-deb --fsys-tarfile "$dir.tmp"/*.deb | tar -x -O --wildcards './boot/vmlinuz-*' >"$dir.tmp/vmlinuz"
		rm -f "$dir.tmp"/*.deb
		rm -rf "$dir" && mv "$dir.tmp" "$dir"
	fi
	echo "$dir/vmlinuz"
}

passed=0 failed=0 summary=()
for entry in "$@"; do
	suite=${entry%%:*} expect=${entry#*:}
	vmlinuz=$(kernel "$suite")
	image=$(basename "$(dirname "$vmlinuz")")
	log=$build/$image.log
	start=$(date +%s)
	# One emulation thread for both CPUs (thread=single): with a thread each, Debian's
	# 6.12 dies at attach with "Oops: int3" in default_idle_call, a CPU running stale code
	# while the kernel patches the cpu_idle tracepoint in. tsc=reliable keeps the TSC as
	# the clock, which the kernel otherwise drops for the HPET as unsynchronized.
	timeout 600 qemu-system-x86_64 -accel tcg,thread=single -smp 2 -m 2G -nographic -no-reboot \
		-kernel "$vmlinuz" -initrd "$build/initramfs.cpio" \
		-append "console=ttyS0 panic=-1 quiet tsc=reliable threadcap.expect=$expect" </dev/null >"$log" 2>&1 || true
	took=$(($(date +%s) - start))
	if grep -q '^threadcap-kernel-result: PASS' "$log"; then
		passed=$((passed + 1))
		summary+=("PASS  $image ($suite, $expect) in ${took}s")
	else
		failed=$((failed + 1))
		summary+=("FAIL  $image ($suite, $expect) in ${took}s: see $log")
		echo "--- $image: the guest's console, last lines" >&2
		tail -n 60 "$log" | tr -d '\r' >&2
	fi
done
echo "kernel matrix:"
printf '  %s\n' "${summary[@]}"
echo "kernel matrix: $passed kernels as expected, $failed not"
[ "$failed" = 0 ]
