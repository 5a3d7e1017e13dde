#!/usr/bin/env bash
# make scale-bare: ingest throughput with 1, 2 and 3 ingest replicas as bare processes (no
# containers) — the same measurement deploy-test makes in the compose stack with
# DEPLOY_SCALE_FIGURES=1, on the same kind of back end: a 3-node NATS cluster on loopback
# (streams R3, sync always), MariaDB and Redis from scripts/services.sh.
#
# For each replica count: publish a backlog of MESSAGES turn messages while no ingest runs,
# start the replicas, and time the drain from the first stored message to the last
# (deploy/loadtest drain). Prints a table; leaves nothing running.
#
# usage: scale-bare.sh [MESSAGES]   (default 20000)
# SCALE_NATS_SYNC=interval: JetStream's default fsync interval instead of `always` (to see
# what the fsync per write costs).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
ROOT=$PWD
MESSAGES=${1:-20000}
W=$(mktemp -d /tmp/membus-scale.XXXXXX)
log() { printf '[scale-bare %4ds] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
T0=$(date +%s)
PIDS=()
cleanup() {
  set +e
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  mysql -u root -e "DROP DATABASE IF EXISTS membus_scale" 2>/dev/null
  redis-cli -n 7 FLUSHDB >/dev/null 2>&1
  rm -rf "$W"
}
trap cleanup EXIT

eval "$(bash scripts/services.sh)"
eval "$(bash scripts/nats-server.sh 2>/dev/null)"
make -s build >/dev/null
(cd deploy/loadtest && GOWORK=off go build -o "$W/loadtest" .)
mysql -u root -e "DROP DATABASE IF EXISTS membus_scale; CREATE DATABASE membus_scale CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
redis-cli -n 7 FLUSHDB >/dev/null

SYNC=", sync_interval: always"
[ "${SCALE_NATS_SYNC:-always}" = interval ] && SYNC=
TOKEN=$(head -c 18 /dev/urandom | base64 | tr -dc A-Za-z0-9)
URLS=nats://127.0.0.1:24222,nats://127.0.0.1:24223,nats://127.0.0.1:24224
for i in 1 2 3; do
  cat >"$W/nats-$i.conf" <<CONF
server_name: nats-$i
listen: 127.0.0.1:$((24221 + i))
http: 127.0.0.1:$((28221 + i))
authorization { token: "$TOKEN" }
jetstream { store_dir: "$W/js-$i"$SYNC }
cluster {
  name: membus-scale
  listen: 127.0.0.1:$((26221 + i))
  routes: [nats-route://127.0.0.1:26222, nats-route://127.0.0.1:26223, nats-route://127.0.0.1:26224]
}
CONF
  "$MEMBUS_TEST_NATS_SERVER" -c "$W/nats-$i.conf" >"$W/nats-$i.log" 2>&1 &
  PIDS+=($!)
done
for i in 1 2 3; do
  # healthz answers ok once the node's JetStream is current (the cluster has its meta leader).
  for _ in $(seq 1 150); do curl -fs "http://127.0.0.1:$((28221 + i))/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
done
export MEMBUS_NATS_URL=$URLS MEMBUS_NATS_TOKEN=$TOKEN MEMBUS_STREAM_REPLICAS=3 \
  MEMBUS_MYSQL_DSN='membus:membus@tcp(127.0.0.1:3306)/membus_scale?parseTime=true' \
  MEMBUS_REDIS_URL=redis://127.0.0.1:6379/7 MEMBUS_EMBEDDER=hash MEMBUS_LOG_LEVEL=warn MEMBUS_LOG_FORMAT=json

declare -A ING
start_ingest() { # i
  mkdir -p "$W/ingest-$1"
  ./bin/membus ingest --data-dir "$W/ingest-$1" --http-addr "127.0.0.1:$((28080 + $1))" --instance-id "ingest-$1" \
    >"$W/ingest-$1.log" 2>&1 &
  ING[$1]=$!
  PIDS+=($!)
  for _ in $(seq 1 150); do curl -fs "http://127.0.0.1:$((28080 + $1))/readyz" >/dev/null 2>&1 && return 0; sleep 0.2; done
  tail -20 "$W/ingest-$1.log" >&2
  echo "ingest-$1 not ready" >&2
  return 1
}
stop_ingest() { kill "${ING[$1]}" 2>/dev/null; wait "${ING[$1]}" 2>/dev/null || true; }

# One ingest creates the streams and its consumer (R3), then stops: the backlogs queue for it.
# A fresh cluster may not take stream creation yet; like a restart policy, try again.
for try in 1 2 3 4 5; do start_ingest 1 2>"$W/start.err" && break; [ "$try" = 5 ] && { cat "$W/start.err" >&2; exit 1; }; sleep 2; done
stop_ingest 1
log "3-node NATS cluster, streams R3, sync ${SCALE_NATS_SYNC:-always}, MariaDB + Redis; $MESSAGES messages per run"
printf '\n%-16s %-10s %-12s %-8s %s\n' "ingest replicas" "msg/s" "drain s" "load" "CPU (top 5 processes, % of one core)"
for n in 1 2 3; do
  run=scale$n-$(date +%s)
  "$W/loadtest" drain --nats "$URLS" --phase fill --run "$run" --messages "$MESSAGES" >/dev/null
  "$W/loadtest" drain --nats "$URLS" --phase measure --run "$run" --messages "$MESSAGES" >"$W/scale$n.json" &
  m=$!
  sleep 3 # the measurement sees the whole backlog before the replicas start
  for i in $(seq 1 "$n"); do start_ingest "$i"; done
  sleep 2
  load=$(cut -d' ' -f1 /proc/loadavg)
  # Where the CPU goes mid-drain: top's second frame (the first averages since boot).
  cpu=$(top -b -n 2 -d 1 -o %CPU | awk '/^top -/{f++} f==2 && $1 ~ /^[0-9]+$/ {printf "%s %s, ", $12, $9; if (++k == 5) exit}')
  wait "$m"
  for i in $(seq 1 "$n"); do stop_ingest "$i"; done
  j() { grep -o "\"$1\":[^,}]*" "$W/scale$n.json" | cut -d: -f2; }
  printf '%-16s %-10.0f %-12.1f %-8s %s\n' "$n" "$(j msg_per_s)" "$(j seconds)" "$load" "${cpu%, }"
  [ "$(j stored)" = "$MESSAGES" ] || log "note: run $n stored $(j stored) of $MESSAGES (read from SQL once the consumer was drained)"
done
echo
log "done"
