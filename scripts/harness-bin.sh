#!/usr/bin/env bash
# Builds what scripts/chaos.sh and scripts/soak.sh run into DIR: membus (services/membus, as
# make build does but without version stamps) and deploy/loadtest. Their own copies, not
# bin/membus: that one may be running (make run) or being rebuilt. With HARNESS_BIN set to a
# directory that already holds both, it prints that directory and builds nothing (.ci/run
# builds once for both scripts).
# usage: harness-bin.sh DIR   (prints the directory the binaries are in)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
if [ -n "${HARNESS_BIN:-}" ] && [ -x "$HARNESS_BIN/membus" ] && [ -x "$HARNESS_BIN/loadtest" ]; then
  echo "$HARNESS_BIN"
  exit 0
fi
dir=${1:?usage: harness-bin.sh DIR}
mkdir -p "$dir"
(cd services/membus && go build -trimpath -o "$dir/membus" .)
(cd deploy/loadtest && GOWORK=off go build -trimpath -o "$dir/loadtest" .)
echo "$dir"
