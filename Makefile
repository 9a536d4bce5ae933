# SPDX-License-Identifier: Apache-2.0
PREFIX ?= /usr/local
GO ?= go
# Pinned: the committed BPF objects are what this exact compiler produces.
CLANG ?= clang-19
STRIP ?= llvm-strip-19

.PHONY: build test lint fuzz generate check-generated install-clang vendor-headers bench

build:
	$(GO) build -o threadcap ./cmd/threadcap

# Everything CI runs. Privileged tests load BPF programs and need root (under CI=true they
# fail rather than skip). Packages run one at a time (-p 1): their spinners measure CPU shares.
test: lint check-generated
	$(GO) test -race -p 1 -count=1 ./...
	cd test/duckdb && $(GO) test -count=1 ./...
	$(MAKE) fuzz

# Runs every fuzz target for FUZZTIME. go test -fuzz takes one target of one package at a
# time, so the targets are found by package: a new func FuzzX in any _test.go is included.
FUZZTIME ?= 10s
fuzz:
	@set -e; $(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go 2>/dev/null); do \
			echo "fuzz $$pkg $$target for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

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

# Refreshes the vendored libbpf headers from Debian's libbpf-dev.
vendor-headers:
	@test -d /usr/include/bpf || (apt-get update -qq && apt-get install -y -qq libbpf-dev >/dev/null)
	cp /usr/include/bpf/bpf_helpers.h /usr/include/bpf/bpf_helper_defs.h \
		/usr/include/bpf/bpf_tracing.h /usr/include/bpf/bpf_core_read.h bpf/include/

# What threadcap costs (needs root; about 8 minutes; see BENCHMARKS.md), then the CSV
# writer's throughput, then report's (an hour of 10 million rows, written first: about 2 GB
# in the temp dir). BENCH_FLAGS passes options to test/bench, such as --scale 1000.
BENCH_OUT ?= bench-results.md
bench:
	@mkdir -p .bench
	$(GO) build -o .bench/threadcap ./cmd/threadcap
	$(GO) build -o .bench/bench ./test/bench
	.bench/bench --daemon .bench/threadcap --out $(BENCH_OUT) $(BENCH_FLAGS)
	$(GO) test -run '^$$' -bench . -cpu 1 ./output/
	$(GO) test -run '^$$' -bench . -benchtime 1x -cpu 1 ./output/report/
