#!/usr/bin/env bash
# Builds the lint tools from the Go module proxy (with the Go that builds membus, so they read
# its standard library) into a cache outside the clone, once, and prints their paths: golangci-lint,
# then deadcode. `make lint` runs both.
set -euo pipefail
source "$(dirname "$0")/toolchain.sh"
CACHE=${MEMBUS_TOOLS_DIR:-$HOME/.cache/membus/tools}

# tool NAME PACKAGE VERSION: build PACKAGE@VERSION as NAME unless cached; print its path.
tool() {
  local bin="$CACHE/$1-$3-$(go env GOVERSION)"
  if [ ! -x "$bin" ]; then
    mkdir -p "$CACHE"
    echo "[lint-tools] building $2@$3 (once)" >&2
    local tmp
    tmp=$(mktemp -d)
    GOBIN="$tmp" GOFLAGS= go install "$2@$3" >&2
    mv "$tmp/$1" "$bin"
    rm -rf "$tmp"
  fi
  echo "$bin"
}

tool golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "${GOLANGCI_LINT_VERSION:-v2.15.0}"
tool deadcode golang.org/x/tools/cmd/deadcode "${DEADCODE_VERSION:-v0.52.0}"
