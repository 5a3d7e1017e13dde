#!/usr/bin/env bash
# Builds a current standalone nats-server from the Go module proxy (Debian's 2.9.10 is too old)
# into a cache outside the clone, and prints MEMBUS_TEST_NATS_SERVER for the tests that start one.
set -euo pipefail
source "$(dirname "$0")/toolchain.sh"
VERSION=${NATS_SERVER_VERSION:-v2.15.2}
CACHE=${MEMBUS_TOOLS_DIR:-$HOME/.cache/membus/tools}
# Static (no cgo): the same binary runs the multi-process tests and, copied into a FROM-scratch
# image, the NATS nodes of deploy/'s offline stack (scripts/deploy-images.sh).
BIN="$CACHE/nats-server-$VERSION-$(go env GOVERSION)-static"
if [ ! -x "$BIN" ]; then
  mkdir -p "$CACHE"
  echo "[nats-server] building nats-server $VERSION (once)" >&2
  tmp=$(mktemp -d)
  CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-trimpath go install -ldflags '-s -w' "github.com/nats-io/nats-server/v2@$VERSION" >&2
  mv "$tmp/nats-server" "$BIN"
  rm -rf "$tmp"
fi
"$BIN" --version >&2
echo "export MEMBUS_TEST_NATS_SERVER=$BIN"
