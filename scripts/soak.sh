#!/usr/bin/env bash
# make soak: `membus up` (embedded defaults, a fresh data dir) under a bounded, steady load for
# SOAK_DURATION, checking that its RSS, goroutines and open files stay flat.
#
# The load (deploy/loadtest soak, 3 workers, SOAK_RATE turn events/s in all) repeats one
# cycle: a new session's 8 turns over the bus, a synchronous commit, recall and context over
# the bus and over HTTP, then the session's erasure, so the data the process holds stays
# bounded. Every SOAK_DURATION/40 (at least 1 s) it samples VmRSS from /proc/<pid>/status, the
# entries of /proc/<pid>/fd and go_goroutines from the gateway's /metrics (the Prometheus Go
# collector), and prints a table. Flat: the median sample of the last third is at most the
# median of the first third (after a warm-up of a sixth of the run) × (1 + tolerance) + slack:
# RSS 10% + 8 MiB, goroutines 10% + 10, open files + 8 (medians: a leak lifts every later
# sample, one sample taken mid-commit lifts only itself). Exit 1 when a figure grows past that,
# or the load failed to run. JetStream holds every Nats-Msg-Id of the streams' 10-minute dedup
# window in memory, so RSS rises with the publish rate while that window fills: at the default
# pace a 10-minute run passed by under 1 MiB here (docs/operations.md has the measurements); a
# verdict past the window takes SOAK_DURATION=30m SOAK_WARMUP=12m.
#
# Environment: SOAK_DURATION (default 10m; CI 60s), SOAK_WARMUP (default a sixth of the
# duration), SOAK_RATE (60 turn events/s; 0: as fast as the workers go), SOAK_PORT_BASE (18600:
# HTTP +0, NATS +1), SOAK_KEEP=1 (keep the data dir and log).
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
DURATION=${SOAK_DURATION:-10m}
PORT=${SOAK_PORT_BASE:-18600}
HTTP_ADDR=127.0.0.1:$PORT NATS_LISTEN=127.0.0.1:$((PORT + 1))
W=$(mktemp -d /tmp/membus-soak.XXXXXX)
log() { printf '[soak %4ds] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

MPID=
cleanup() {
  local rc=$?
  set +e
  [ -n "$MPID" ] && kill -9 "$MPID" 2>/dev/null
  wait 2>/dev/null
  if [ -n "${SOAK_KEEP:-}" ] || [ "$rc" != 0 ]; then log "work dir kept: $W (membus log: $W/membus.log)"; else rm -rf "$W"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for p in "$PORT" $((PORT + 1)); do
  (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && die "port $p is taken: set SOAK_PORT_BASE to a free range (it uses 2 ports from it)"
done

log "building membus and deploy/loadtest (scripts/harness-bin.sh)"
BIN=$(bash scripts/harness-bin.sh "$W/bin")

unset MEMBUS_NATS_URL MEMBUS_NATS_TOKEN MEMBUS_MYSQL_DSN MEMBUS_REDIS_URL MEMBUS_QDRANT_URL MEMBUS_INSECURE_NO_AUTH
export MEMBUS_DATA_DIR=$W/data MEMBUS_HTTP_ADDR=$HTTP_ADDR MEMBUS_NATS_LISTEN=$NATS_LISTEN MEMBUS_EMBEDDER=hash \
  MEMBUS_COMMIT_TOKEN_THRESHOLD=2000 MEMBUS_RATE_LIMIT=1000 MEMBUS_RATE_BURST=1000 MEMBUS_LOG_FORMAT=json MEMBUS_LOG_LEVEL=warn
"$BIN/membus" up >"$W/membus.out" 2>"$W/membus.log" &
MPID=$!
for _ in $(seq 1 300); do curl -fs "http://$HTTP_ADDR/readyz" >/dev/null 2>&1 && break; kill -0 "$MPID" 2>/dev/null || break; sleep 0.2; done
curl -fs "http://$HTTP_ADDR/readyz" >/dev/null 2>&1 || { tail -20 "$W/membus.log" >&2; die "membus up did not become ready"; }
KEY=$("$BIN/membus" keys create --account soak --role admin)
log "membus up (pid $MPID) ready; soaking for $DURATION (a sample every ${DURATION}/40, at least 1 s)"
echo
"$BIN/loadtest" soak --nats "nats://$NATS_LISTEN" --token "$(cat "$W/data/nats.token")" --account soak --run "s$(date +%s)" \
  --pid "$MPID" --metrics "http://$HTTP_ADDR/metrics" --http "http://$HTTP_ADDR" --key "$KEY" --duration "$DURATION" --rate "${SOAK_RATE:-60}" --warmup "${SOAK_WARMUP:-0}" \
  || die "the soak failed (table above)"
echo
kill -TERM "$MPID"
rc=0
wait "$MPID" || rc=$?
MPID=
[ "$rc" = 0 ] || die "membus up exited $rc on SIGTERM after the soak (log: $W/membus.log)"
log "PASS: flat over $DURATION, clean stop"
