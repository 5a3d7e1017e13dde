#!/usr/bin/env bash
# make test: every Go module's tests and the OpenClaw plugin's suite, side by side. Both spend
# most of their time waiting (on real servers, timers, OpenClaw's CLI starting up), not on the
# CPU: in CI the Go tests used about a quarter of the two cores' time, and the plugin suite
# (npm ci, then OpenClaw's real gateway and agent runner) took another four minutes after them
# when run in a row. The plugin's output is kept apart and printed after the Go tests', so
# neither log is interleaved; the run fails when either fails.
#
# Usage (the Makefile passes these): TEST_FLAGS="-race -count=1" PACKAGES="mod/... mod2/..." scripts/test.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
GO=${GO:-go}
: "${PACKAGES:?set by make test: the module paths of the workspace, each with /...}"
read -r -a flags <<<"${TEST_FLAGS:--race -count=1 -timeout 15m -p 4}"
read -r -a packages <<<"$PACKAGES"

# The LoCoMo dev split sits beside the repository (../shared). A clone made elsewhere, as CI's
# fresh clone is, finds it beside the repository it was cloned from, so the BM25 anchor's test
# runs there too instead of skipping.
if [ -z "${MEMBUS_LOCOMO:-}" ]; then
  for root in .. "$(git remote get-url origin 2>/dev/null)/.."; do
    if [ -f "$root/shared/data/locomo/locomo-dev.json" ]; then
      MEMBUS_LOCOMO="$(cd "$root/shared/data/locomo" && pwd)/locomo-dev.json"
      export MEMBUS_LOCOMO
      break
    fi
  done
fi

t0=$(date +%s)
plugin_log=$(mktemp "${TMPDIR:-/tmp}/membus-plugin-test.XXXXXX")
trap 'rm -f "$plugin_log"; kill "$plugin" 2>/dev/null || true' EXIT
bash clients/openclaw/scripts/test.sh >"$plugin_log" 2>&1 &
plugin=$!
echo "== openclaw plugin suite: running beside the Go tests; its output follows theirs"

rc=0
echo "$GO test ${flags[*]} ${packages[*]}"
"$GO" test "${flags[@]}" "${packages[@]}" || rc=1
echo "cd deploy/loadtest && GOWORK=off $GO test ${flags[*]} ./..."
(cd deploy/loadtest && GOWORK=off "$GO" test "${flags[@]}" ./...) || rc=1
# Which of the two is the long pole (the plugin's own lines count from its start, the same second).
echo "== go tests: done $(( $(date +%s) - t0 ))s after they and the plugin suite started"

plugin_rc=0
wait "$plugin" || plugin_rc=$?
echo
echo "== openclaw plugin suite (bash clients/openclaw/scripts/test.sh), ran beside the Go tests"
cat "$plugin_log"
if [ "$plugin_rc" -ne 0 ]; then
  echo "the openclaw plugin suite failed (exit $plugin_rc; output above)" >&2
  rc=1
fi
[ "$rc" -eq 0 ] || echo "make test: failed (see the FAIL lines above)" >&2
exit "$rc"
