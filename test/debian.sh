# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that fetch from Debian's archive (test/kernels, test/systemd).

# debian_mirror prints $MIRROR, else the Debian mirror apt is configured with, so that the
# tests fetch from wherever this machine's apt-get does.
debian_mirror() {
	local mirror=${MIRROR:-}
	if [ -z "$mirror" ]; then
		mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n1 || true)
	fi
	if [ -z "$mirror" ]; then
		mirror=$(awk '$1 == "deb" && !/security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
			/etc/apt/sources.list 2>/dev/null || true)
	fi
	[ -n "$mirror" ] || { echo "no Debian mirror in apt's sources: set MIRROR" >&2; return 1; }
	echo "$mirror"
}
