# SPDX-License-Identifier: Apache-2.0
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
GO ?= go
# Pinned: the committed BPF objects are what this exact compiler produces.
CLANG ?= clang-19
STRIP ?= llvm-strip-19

.PHONY: build install install-files deb verify-unit test lint fuzz generate check-generated install-clang install-postgres install-prometheus install-s3 install-blocktools vendor-headers vendor-echarts install-chromium screenshot bench test-kernels install-qemu test-systemd install-nspawn install-tmux install-iproute2

# -buildvcs=auto: the commit goes into the binary for `threadcap version` even where the
# environment sets GOFLAGS=-buildvcs=false, and a tree without .git still builds.
build:
	$(GO) build -buildvcs=auto -o threadcap ./cmd/threadcap

# Everything CI runs. Privileged tests load BPF programs and need root (under CI=true they
# fail rather than skip). Packages run one at a time (-p 1): their spinners measure CPU shares.
test: lint check-generated verify-unit install-chromium install-postgres install-prometheus install-s3 install-blocktools install-tmux install-iproute2 test-kernels test-systemd
	$(GO) test -race -p 1 -count=1 ./...
	cd test/duckdb && $(GO) test -count=1 ./...
	$(MAKE) fuzz

# The kernel matrix (test/kernels/run.sh): each suite's Debian kernel booted under qemu's
# emulation, fetched once into KERNEL_CACHE and never installed. bullseye's 5.10 is older
# than the minimum: it passes when threadcap refuses it, naming what it lacks. About 2 min.
KERNELS ?= bullseye:refused bookworm:supported trixie:supported
test-kernels: install-qemu
	test/kernels/run.sh $(KERNELS)

install-qemu:
	@command -v qemu-system-x86_64 >/dev/null && dpkg -s busybox-static >/dev/null 2>&1 && command -v cpio >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			qemu-system-x86 busybox-static cpio >/dev/null)

# The unit under a real systemd (test/systemd/run.sh): a debootstrapped Debian root, made
# once into /var/cache/threadcap-test, booted with systemd-nspawn on this kernel, with
# threadcap installed by install-files and driven with systemctl. About 10 s once cached.
test-systemd: install-nspawn
	test/systemd/run.sh

install-nspawn:
	@command -v systemd-nspawn >/dev/null && command -v debootstrap >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			systemd-container debootstrap >/dev/null)

# Runs every fuzz target for FUZZTIME. go test -fuzz takes one target of one package at a
# time, so the targets are found by package: a new func FuzzX in any _test.go is included.
# A count, not a duration: with a duration Go 1.26's coordinator can report its own deadline
# as "context deadline exceeded" and fail a target that found nothing (go.dev/issue/75804,
# fixed in Go 1.27). 200000 runs take about 5 to 10 s per target here.
FUZZTIME ?= 200000x
fuzz:
	@set -e; $(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go 2>/dev/null); do \
			echo "fuzz $$pkg $$target for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# Installs the binary, the systemd unit (its paths rewritten for BINDIR and SYSCONFDIR),
# the sysusers.d entry of its user and the config, unless one is there already: that one is the administrator's. The binary
# is built first when missing; `make build && sudo make install` keeps go out of sudo.
install:
	@test -x threadcap || $(MAKE) --no-print-directory build
	$(MAKE) --no-print-directory install-files BIN=threadcap

BIN ?= threadcap
install-files:
	install -D -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/threadcap
	install -d $(DESTDIR)$(UNITDIR)
	sed -e 's|/usr/local/bin/threadcap|$(BINDIR)/threadcap|' -e 's|/etc/threadcap/|$(SYSCONFDIR)/threadcap/|' \
		deploy/threadcap.service > $(DESTDIR)$(UNITDIR)/threadcap.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/threadcap.service
	install -D -m 0644 deploy/threadcap.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/threadcap.conf
	test -e $(DESTDIR)$(SYSCONFDIR)/threadcap/threadcap.yaml || \
		install -D -m 0644 configs/threadcap.yaml $(DESTDIR)$(SYSCONFDIR)/threadcap/threadcap.yaml

# A .deb of what `make install PREFIX=/usr` installs, built with nfpm (fetched by go run at
# a pinned version: nothing is added to go.mod).
NFPM ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.41.0
deb:
	rm -rf .deb
	$(GO) build -o .deb/threadcap ./cmd/threadcap
	$(MAKE) --no-print-directory install-files BIN=.deb/threadcap DESTDIR=$(CURDIR)/.deb/root PREFIX=/usr
	DEB_ARCH=$$($(GO) env GOARCH) DEB_VERSION=0.0.0+git$$(git rev-parse --short HEAD) \
		$(NFPM) package --packager deb --config deploy/nfpm.yaml --target .deb/

# Checks the unit as make install writes it: systemd-analyze verify wants its ExecStart
# binary to exist, so this installs under .verify/ and verifies that copy.
verify-unit:
	@command -v systemd-analyze >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null)
	rm -rf .verify
	$(MAKE) --no-print-directory install PREFIX=$(CURDIR)/.verify SYSCONFDIR=$(CURDIR)/.verify/etc
	@# verify exits 0 on unknown or misspelt keys, only warning: any output is a failure.
	@out=$$(systemd-analyze verify .verify/lib/systemd/system/threadcap.service 2>&1); \
		test -z "$$out" || (echo "$$out" >&2; echo "systemd-analyze verify: fix deploy/threadcap.service" >&2; exit 1)
	@systemd-analyze security --offline=true .verify/lib/systemd/system/threadcap.service | tail -1

lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . >&2; echo "gofmt needed on the files above" >&2; exit 1)
	$(GO) vet ./...

# Regenerates the bpf2go output (and the syscall tables) with the pinned compiler.
generate: install-clang
	$(GO) generate ./bpf/ ./state/ ./test/bench/floor/

# Fails when the committed generated files are not what the sources produce.
check-generated: generate
	git diff --exit-code -- bpf/ state/ test/bench/floor/ || \
		(echo "generated files are stale: run 'make generate' and commit the result" >&2; exit 1)

install-clang:
	@command -v $(CLANG) >/dev/null && command -v $(STRIP) >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-19 llvm-19 >/dev/null)

# The terminal view's tests (cmd/threadcap top_*_test.go) drive `threadcap top` in a real
# terminal: tmux, with send-keys and capture-pane.
install-tmux:
	@command -v tmux >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tmux >/dev/null)

# The TCP tests (sampler/tcp_test.go) make network namespaces and a tbf bottleneck and read
# ss: ip, tc and ss.
install-iproute2:
	@command -v ip >/dev/null && command -v tc >/dev/null && command -v ss >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iproute2 >/dev/null)

# The soaks of test/invariants (TestSoak, TestSoakHookFree: the full and the hook-free
# mode), each for SOAK: BENCHMARKS.md's hours of skipped ticks, torn reads and lost spans.
# CI runs them for their default 3 minutes as part of `go test ./...`.
SOAK ?= 1h
soak:
	CI=true THREADCAP_SOAK=$(SOAK) $(GO) test -count=1 -timeout 0 -run '^TestSoak(HookFree)?$$' -v ./test/invariants/

# The whole-machine invariant tests (test/invariants) run a throwaway cluster of Debian's
# PostgreSQL, with pgbench, beside the daemon.
install-postgres:
	@ls /usr/lib/postgresql/*/bin/initdb /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null)

# The metrics test (test/e2e) scrapes the daemon with a throwaway Debian Prometheus on
# 127.0.0.1. Without recommends: it needs no exporters. A machine with systemd also gets
# the package's own service, which the test never uses.
install-prometheus:
	@command -v prometheus >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null)

# The shipping tests (output/ship) upload to a real S3-compatible server: versitygw over a
# temp directory, built from the Go module proxy at a pinned version (a few minutes, once).
VERSITYGW ?= github.com/versity/versitygw/cmd/versitygw@v1.8.0
install-s3:
	@command -v versitygw >/dev/null || GOBIN=$(BINDIR) $(GO) install $(VERSITYGW)

# The block I/O tests (bpf, sampler) attach loop devices with losetup (Debian's mount
# package). This kernel has no device-mapper, so they slow a device with a cgroup v1 blkio
# read limit instead of dmsetup's delay target: nothing else to install.
install-blocktools:
	@command -v losetup >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mount >/dev/null)

# Refreshes the vendored libbpf headers from Debian's libbpf-dev. Their includes of each
# other are made local: the BPF objects are compiled with -nostdinc, so a vendored header
# that reaches outside bpf/include fails the build (check-generated) instead of finding
# /usr/include/bpf on machines that happen to have libbpf-dev.
vendor-headers:
	@test -d /usr/include/bpf || (apt-get update -qq && apt-get install -y -qq libbpf-dev >/dev/null)
	cp /usr/include/bpf/bpf_helpers.h /usr/include/bpf/bpf_helper_defs.h \
		/usr/include/bpf/bpf_tracing.h /usr/include/bpf/bpf_core_read.h bpf/include/
	sed -i 's|#include <bpf/\(.*\)>|#include "\1"|' bpf/include/*.h

# Refreshes the chart library the HTML report inlines (output/report/html/echarts): Apache
# ECharts' npm tarball at a pinned version, checked against its sha256 before anything is
# taken from it; only the minified build, its LICENSE and NOTICE are kept. The embedded
# file's own sha256 goes into SHA256SUMS, which a unit test checks.
ECHARTS_VERSION ?= 6.1.0
ECHARTS_SHA256 ?= 681aff88cc1038c3fa941a3a53d1b177a52250b05335efc607d6105ae13be481
ECHARTS_DIR := output/report/html/echarts
vendor-echarts:
	rm -rf .echarts && mkdir -p .echarts
	curl -sSfL -o .echarts/echarts.tgz https://registry.npmjs.org/echarts/-/echarts-$(ECHARTS_VERSION).tgz
	echo "$(ECHARTS_SHA256)  .echarts/echarts.tgz" | sha256sum -c --quiet
	tar -xzf .echarts/echarts.tgz -C .echarts package/dist/echarts.min.js package/LICENSE package/NOTICE package/licenses/LICENSE-d3
	cp .echarts/package/dist/echarts.min.js .echarts/package/LICENSE .echarts/package/NOTICE .echarts/package/licenses/LICENSE-d3 $(ECHARTS_DIR)/
	cd $(ECHARTS_DIR) && sha256sum echarts.min.js > SHA256SUMS
	sed -i 's/^const Version = ".*"/const Version = "$(ECHARTS_VERSION)"/' $(ECHARTS_DIR)/echarts.go
	rm -rf .echarts

# The HTML report's tests (output/report/html) drive Debian's headless Chromium.
install-chromium:
	@command -v chromium >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null)

# The README's picture of `threadcap report --html`: the page over a recording the daemon
# makes of a real PostgreSQL under pgbench (root; about a minute), shot by headless Chromium.
screenshot: install-chromium install-postgres
	mkdir -p docs
	THREADCAP_SCREENSHOT=$(CURDIR)/docs/report-html.png $(GO) test -count=1 -run '^TestPageOverPostgres$$' ./output/report/html/

# What threadcap costs (needs root; about 8 minutes; see BENCHMARKS.md), then the CSV
# writer's throughput, then report's (an hour of 10 million rows, written first: about 2 GB
# in the temp dir), then report --html's over an hour of 36 million rows (about 3.5 GB,
# with Chromium's load and redraw times). BENCH_FLAGS passes options to test/bench, such as --scale 1000.
BENCH_OUT ?= bench-results.md
bench:
	@mkdir -p .bench
	$(GO) build -buildvcs=auto -o .bench/threadcap ./cmd/threadcap
	CGO_ENABLED=0 $(GO) build -o .bench/bench ./test/bench
	.bench/bench --daemon .bench/threadcap --out $(BENCH_OUT) $(BENCH_FLAGS)
	$(GO) test -run '^$$' -bench . -cpu 1 ./output/
	$(GO) test -run '^$$' -bench . -benchtime 1x -cpu 1 ./output/report/
	$(GO) test -run '^$$' -bench . -benchtime 1x -cpu 1 ./output/report/html/
