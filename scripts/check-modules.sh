#!/usr/bin/env bash
# Every module of go.work builds on its own (GOWORK=off), from its own go.mod and go.sum: what a
# per-service image build or a `go install` of one module needs. `make modules` (CI) runs it;
# `FIX=1` tidies each module first.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
fail=0
for d in $(go list -m -f '{{.Dir}}'); do
  rel=${d#"$PWD"/}
  if [ "${FIX:-}" = 1 ]; then (cd "$d" && GOWORK=off go mod tidy); fi
  if out=$(cd "$d" && GOWORK=off go build ./... 2>&1 && GOWORK=off go vet ./... 2>&1); then
    echo "ok   $rel (GOWORK=off)"
  else
    echo "FAIL $rel (GOWORK=off): run FIX=1 bash scripts/check-modules.sh"; echo "$out" | head -20; fail=1
  fi
done
exit $fail
