#!/usr/bin/env bash
# make deploy-test: the distributed stack of deploy/ under load and faults, on this machine.
#
# 1. Installs what is missing (Debian's docker.io, docker-compose v1, debootstrap) and starts a
#    plain dockerd of its own (data under $STATE) when no Docker daemon answers.
# 2. Builds the offline images (scripts/deploy-images.sh, then deploy/docker-compose.offline.yml:
#    no registry needed) and
#    brings the stack up: 3 NATS nodes (streams R3), MariaDB, Redis, gateway, summarizer,
#    3 ingest, 2 extract and 2 recall replicas (no Qdrant: each recall replica keeps a local
#    index, current from SQL and MEMBUS_EVENTS).
# 3. Runs the README round trip through the gateway.
# 4. Publishes 20,000 turn messages over NATS from 50 sessions while it kills one NATS node,
#    one ingest and one extract replica (and brings them back).
# 5. Checks from SQL and through each recall replica: every acked message stored exactly once,
#    every commit's memories recallable from each replica, an erased user gone from all of
#    them; prints the table.
# 6. Tears everything down: containers, networks and volumes; the dockerd it started, its
#    bridge, its iptables chains and rules, the FORWARD policy and ip_forward as they were.
#
# usage: deploy-test.sh [--prepare | --up | --down]
#   --prepare: only step 1 and the Debian base's download, no daemon (.ci/run runs it early in
#              the background);
#   --up:      steps 1, 2 and 4 only: the stack stays up, its settings in $STATE/stack.env
#              (make chaos's compose target runs its fault matrix against it);
#   --down:    step 6 for a stack --up (or DEPLOY_KEEP=1) left running.
# Environment: DEPLOY_STATE (default /var/tmp/membus-deploy: dockerd data, the debootstrap
# tree and the image cache, kept for the next run; DEPLOY_PURGE=1 removes it at the end),
# DEPLOY_MESSAGES (20000), DEPLOY_RATE (messages/s offered, 800), DEPLOY_SCALE_FIGURES=1 (also
# measure ingest msg/s with 1, 2 and 3 replicas), DEPLOY_KEEP=1 (leave the stack running).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=${DEPLOY_STATE:-/var/tmp/membus-deploy}
MESSAGES=${DEPLOY_MESSAGES:-20000}
RATE=${DEPLOY_RATE:-800}
PROJECT=membusdt
GW_PORT=${DEPLOY_GATEWAY_PORT:-18080}
T0=$(date +%s)
mkdir -p "$STATE/out"
chmod 0777 "$STATE/out"
OUT=$STATE/out
rm -f "$OUT"/*

log() { printf '[deploy-test %4ds] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# --- 1. tools -----------------------------------------------------------------------------
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v docker-compose >/dev/null || need+=(docker-compose)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v iptables-save >/dev/null || need+=(iptables)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
DOCKER=/usr/bin/docker
[ -x "$DOCKER" ] || DOCKER=$(command -v docker)
if [ "${1:-}" = --prepare ]; then
  # Only what needs the network and disks, not the CPU or a daemon: .ci/run starts this in the
  # background while it lints, so a fresh machine's downloads overlap other work.
  DEPLOY_STATE=$STATE bash scripts/deploy-images.sh --rootfs
  log "prepared in $(($(date +%s) - T0)) s"
  exit 0
fi

MODE=${1:-test}
case $MODE in test | --up | --down) ;; *) die "unknown argument $MODE (usage: deploy-test.sh [--prepare | --up | --down])" ;; esac

# The host's network state before dockerd touches it, to restore it afterwards.
OWN_DOCKERD=
FWD_BEFORE=$(sysctl -n net.ipv4.ip_forward)
LINKS_BEFORE=$(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort)
if [ "$MODE" = --down ]; then
  # What --up (or DEPLOY_KEEP=1) saved: the secrets compose needs, the daemon and the host's
  # network state before it.
  [ -f "$STATE/stack.env" ] || die "no stack to take down: $STATE/stack.env is missing (deploy-test.sh --up writes it)"
  # shellcheck disable=SC1091
  . "$STATE/stack.env"
  LINKS_BEFORE=$(tr ' ' '\n' <<<"$LINKS_BEFORE_SAVED")
  unset DEPLOY_KEEP
fi

# (Defined before cleanup, which --down runs before anything else.)
export COMPOSE_PROJECT_NAME=$PROJECT COMPOSE_HTTP_TIMEOUT=300
dc() { docker-compose -f "$ROOT/deploy/docker-compose.yml" -f "$ROOT/deploy/docker-compose.offline.yml" "$@"; }

cleanup() {
  local rc=$?
  set +e
  if [ -z "${DEPLOY_KEEP:-}" ]; then
    log "tearing down"
    dc down -v --remove-orphans -t 10 >"$STATE/down.log" 2>&1 || log "compose down failed: $(tail -3 "$STATE/down.log")"
    "$DOCKER" ps -aq --filter label=membus.deploy-test | xargs -r "$DOCKER" rm -f >/dev/null 2>&1
    # Images replaced by this run's builds: the cache keeps only the current ones.
    "$DOCKER" image prune -f >/dev/null 2>&1
    if [ -n "$OWN_DOCKERD" ]; then
      kill "$OWN_DOCKERD" 2>/dev/null
      for _ in $(seq 1 60); do kill -0 "$OWN_DOCKERD" 2>/dev/null || break; sleep 0.5; done
      kill -9 "$OWN_DOCKERD" 2>/dev/null
      # dockerd's own containerd, if it was left behind.
      [ -f "$STATE/exec/containerd/containerd.pid" ] && kill "$(cat "$STATE/exec/containerd/containerd.pid")" 2>/dev/null
      # Its bridges (docker0 and any br-* compose made) and veths.
      for l in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort); do
        grep -qx "$l" <<<"$LINKS_BEFORE" || $SUDO ip link del "$l" 2>/dev/null
      done
      # Its iptables chains and rules, and the FORWARD policy: back to the saved tables.
      for t in filter nat; do $SUDO iptables -t "$t" -F; $SUDO iptables -t "$t" -X; done
      $SUDO iptables -P FORWARD ACCEPT
      [ -s "$STATE/iptables.before" ] && $SUDO iptables-restore <"$STATE/iptables.before"
      $SUDO sysctl -qw net.ipv4.ip_forward="$FWD_BEFORE"
      rm -f "$STATE/docker.sock"
    fi
    rm -f "$STATE/stack.env"
  fi
  [ -n "${DEPLOY_PURGE:-}" ] && $SUDO rm -rf "$STATE"
  log "done in $(($(date +%s) - T0)) s, exit $rc"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ "$MODE" = --down ] && exit 0 # cleanup does it

# --- 2. a Docker daemon ---------------------------------------------------------------------
if [ -n "${DOCKER_HOST:-}" ] && "$DOCKER" info >/dev/null 2>&1; then
  log "using the Docker daemon at $DOCKER_HOST"
elif "$DOCKER" -H unix:///var/run/docker.sock info >/dev/null 2>&1; then
  export DOCKER_HOST=unix:///var/run/docker.sock
  log "using the running Docker daemon"
else
  $SUDO iptables-save >"$STATE/iptables.before"
  mkdir -p "$STATE/docker" "$STATE/exec"
  log "starting dockerd (data in $STATE/docker)"
  $SUDO dockerd --data-root "$STATE/docker" --exec-root "$STATE/exec" --pidfile "$STATE/dockerd.pid" \
    -H "unix://$STATE/docker.sock" >"$STATE/dockerd.log" 2>&1 &
  OWN_DOCKERD=$!
  export DOCKER_HOST=unix://$STATE/docker.sock
  for _ in $(seq 1 60); do "$DOCKER" info >/dev/null 2>&1 && break; sleep 0.5; done
  "$DOCKER" info >/dev/null 2>&1 || { tail -20 "$STATE/dockerd.log" >&2; die "dockerd did not start"; }
fi


# --- 3. images -----------------------------------------------------------------------------
DEPLOY_STATE=$STATE bash scripts/deploy-images.sh --loadtest || die "deploy-images failed"

# Secrets: fresh for every run, by environment.
rand() { head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9'; }
export MEMBUS_NATS_TOKEN=$(rand) MEMBUS_DB_PASSWORD=$(rand) MEMBUS_DB_ROOT_PASSWORD=$(rand) MEMBUS_REDIS_PASSWORD=$(rand)
MEMBUS_NATS_AUTH_ISSUER=$("$ROOT/deploy/offline/.build/membus" keys nats-issuer) || die "membus keys nats-issuer failed"
export MEMBUS_NATS_AUTH_ISSUER
# Each service's NATS password (MEMBUS_NATS_PASS_<SERVICE>), derived from the token.
NATS_PASSES=$("$ROOT/deploy/offline/.build/membus" keys nats-passwords) || die "membus keys nats-passwords failed"
while IFS='=' read -r k v; do export "$k=$v"; done <<<"$NATS_PASSES"
export MEMBUS_QDRANT_URL= MEMBUS_GATEWAY_PORT=$GW_PORT MEMBUS_NATS_PORT_1=14222 MEMBUS_NATS_PORT_2=14223 MEMBUS_NATS_PORT_3=14224
export MEMBUS_COMMIT_TOKEN_THRESHOLD=2000
log "building images"
dc build -q >"$STATE/build.log" 2>&1 || { tail -30 "$STATE/build.log" >&2; die "image build failed"; }
T_IMAGES=$(($(date +%s) - T0))

# --- 4. the stack --------------------------------------------------------------------------
log "up: 3 nats, mariadb, redis, gateway, summarizer, ingest×3, extract×2, recall×2"
dc up -d --no-build --scale ingest=3 --scale extract=2 --scale recall=2 >"$STATE/up.log" 2>&1 \
  || { tail -30 "$STATE/up.log" >&2; die "compose up failed"; }
wait_healthy() { bash "$ROOT/scripts/deploy-wait.sh" "${1:-180}" 2>"$STATE/wait.log" || { cat "$STATE/wait.log" >&2; die "not healthy within ${1:-180}s"; }; }
wait_healthy 240
T_UP=$(($(date +%s) - T0))
log "all $("$DOCKER" ps -q --filter "label=com.docker.compose.project=$PROJECT" | wc -l) containers healthy"
cname() { echo "${PROJECT}_$1_$2"; }
if [ "$MODE" = --up ] || [ -n "${DEPLOY_KEEP:-}" ]; then
  # What make chaos and --down need to reach this stack again: printf %q keeps the values whole.
  {
    for v in DOCKER_HOST COMPOSE_PROJECT_NAME MEMBUS_NATS_TOKEN MEMBUS_DB_PASSWORD MEMBUS_DB_ROOT_PASSWORD \
      MEMBUS_REDIS_PASSWORD MEMBUS_NATS_AUTH_ISSUER MEMBUS_GATEWAY_PORT MEMBUS_NATS_PORT_1 MEMBUS_NATS_PORT_2 \
      MEMBUS_NATS_PORT_3 MEMBUS_NATS_PASS_GATEWAY MEMBUS_NATS_PASS_INGEST MEMBUS_NATS_PASS_EXTRACT MEMBUS_NATS_PASS_RECALL \
      MEMBUS_NATS_PASS_SUMMARIZER OWN_DOCKERD FWD_BEFORE; do
      printf 'export %s=%q\n' "$v" "${!v}"
    done
    printf 'LINKS_BEFORE_SAVED=%q\n' "$(tr '\n' ' ' <<<"$LINKS_BEFORE")"
  } >"$STATE/stack.env"
  chmod 600 "$STATE/stack.env"
fi
if [ "$MODE" = --up ]; then
  DEPLOY_KEEP=1
  log "the stack is up (settings in $STATE/stack.env); take it down with: bash scripts/deploy-test.sh --down"
  exit 0
fi

# --- 5. the README round trip through the gateway -----------------------------------------
GW=http://127.0.0.1:$GW_PORT
KEY=$(dc exec -T gateway membus keys create --account default --user alice --role user | tr -d '\r')
[ -n "$KEY" ] || die "keys create printed no key"
H=(-H "Authorization: Bearer $KEY")
curl -fsS -X POST "$GW/v1/sessions/demo/messages" "${H[@]}" \
  -d '{"messages":[{"role":"user","content":"Hi, my name is Alice and I live in Lisbon."},
                   {"role":"assistant","content":"Nice to meet you, Alice!"}]}' >/dev/null
curl -fsS -X POST "$GW/v1/sessions/demo/messages" "${H[@]}" \
  -d '{"messages":[{"role":"user","content":"I love hiking in the mountains on weekends."},
                   {"role":"assistant","content":"That sounds wonderful."}]}' >/dev/null
COMMIT=$(curl -fsS -X POST "$GW/v1/sessions/demo/commit" "${H[@]}" -d '{"wait":true}')
RECALL=$(curl -fsS -X POST "$GW/v1/recall" "${H[@]}" -d '{"query":"where does Alice live?"}')
curl -fsS "$GW/v1/sessions/demo" "${H[@]}" >/dev/null
curl -fsS "$GW/v1/sessions/demo/context?token_budget=8000" "${H[@]}" >/dev/null
grep -q '"status":"completed"' <<<"$COMMIT" || die "round trip commit: $COMMIT"
grep -q 'Lisbon' <<<"$RECALL" || die "round trip recall has no Lisbon: $RECALL"
log "round trip: commit $(grep -o '"memories":{[^}]*}' <<<"$COMMIT"), recall found Lisbon"

NET=${PROJECT}_default
lt() { # loadtest <subcommand> [flags]: one run on the compose network
  "$DOCKER" run --rm --label membus.deploy-test=1 --network "$NET" -v "$OUT:/out" \
    -e MEMBUS_NATS_TOKEN -e MEMBUS_MYSQL_DSN="membus:$MEMBUS_DB_PASSWORD@tcp(mariadb:3306)/membus?parseTime=true" \
    membus/loadtest "$@"
}
RUN=r$(date +%s)

# --- 5b. tenancy on the bus: an API key reaches its own account only ------------------------
TKEY=$(dc exec -T gateway membus keys create --account tenant-a --role admin --name deploy-test | tr -d '\r')
TENANCY=$(lt tenancy --account tenant-a --other tenant-b --key "$TKEY" --run "$RUN") || die "bus tenancy: $TENANCY"
log "bus tenancy: $TENANCY"

# --- 6. load with faults -------------------------------------------------------------------
acked_now() { grep -o 'acked=[0-9]*' "$OUT/publish.err" 2>/dev/null | tail -1 | cut -d= -f2; }
wait_acked() {
  local n=$1
  while [ "$(acked_now || echo 0)" -lt "$n" ] 2>/dev/null; do
    kill -0 "$PUB" 2>/dev/null || return 0
    sleep 0.3
  done
}
log "publishing $MESSAGES messages from 50 sessions at $RATE msg/s (run $RUN)"
T_LOAD0=$(date +%s)
lt publish --run "$RUN" --messages "$MESSAGES" --sessions 50 --rate "$RATE" >"$OUT/publish.json" 2>"$OUT/publish.err" &
PUB=$!
# The NATS node to kill: the turns stream's leader (a leader election under load), else nats-2.
VICTIM=$(lt leader 2>/dev/null | grep -o 'nats-[123]' || true)
VICTIM=${VICTIM:-nats-2}
log "the turns stream's leader is $VICTIM"
wait_acked $((MESSAGES * 3 / 10))
log "faults at $(acked_now) acked: kill $VICTIM (the turns stream's leader), ingest_2, extract_1"
"$DOCKER" kill "$(cname "$VICTIM" 1)" "$(cname ingest 2)" "$(cname extract 1)" >/dev/null
wait_acked $((MESSAGES * 6 / 10))
log "restarting them at $(acked_now) acked"
"$DOCKER" start "$(cname "$VICTIM" 1)" "$(cname ingest 2)" "$(cname extract 1)" >/dev/null
wait "$PUB" || { tail -20 "$OUT/publish.err" >&2; die "publish failed"; }
T_LOAD=$(($(date +%s) - T_LOAD0))
log "publish: $(cat "$OUT/publish.json")"
wait_healthy 180

# --- 7. checks -----------------------------------------------------------------------------
lt stored --run "$RUN" >"$OUT/stored.json" || die "stored check failed"
log "stored: $(cat "$OUT/stored.json")"
lt commit --run "$RUN" >"$OUT/commit.json" || { cat "$OUT/commit.json" >&2; die "final commits failed"; }
log "commit: $(cat "$OUT/commit.json")"
ERASED=$RUN-u03
lt erase --run "$RUN" --user "$ERASED" >"$OUT/erase.json" || die "erase failed"
# Each recall replica alone: stop the other, ask, start it again (it catches up on start).
for i in 1 2; do
  other=$((3 - i))
  "$DOCKER" stop -t 10 "$(cname recall "$other")" >/dev/null
  lt recall --run "$RUN" --label "recall_$i" >"$OUT/recall_$i.json" || die "recall check failed"
  lt erase --run "$RUN" --user "$ERASED" --check-only --label "recall_$i" >"$OUT/erased_$i.json" || die "erase check failed"
  "$DOCKER" start "$(cname recall "$other")" >/dev/null
  wait_healthy 120
done

# --- 8. the table --------------------------------------------------------------------------
j() { grep -o "\"$2\":[^,}]*" "$OUT/$1" | head -1 | cut -d: -f2 | tr -d '"'; }
PASS=1
printf '\n%-34s %s\n' "deploy-test ($RUN)" "value"
row() { printf '%-34s %s\n' "$1" "$2"; }
row "messages published (acked)" "$(j publish.json acked)  (gave up: $(j publish.json failed), retries: $(j publish.json retries), ${T_LOAD}s)"
row "faults mid-load" "killed $VICTIM (turns leader), ingest_2, extract_1; restarted"
row "stored exactly once" "$(j stored.json stored_once)"
row "duplicates" "$(j stored.json duplicates)"
row "lost (acked, not stored)" "$(j stored.json lost)"
row "stored though unacked" "$(j stored.json stored_unacked)"
row "sessions committed (wait:true)" "$(j commit.json committed)/$(j commit.json sessions)  (archives: $(j commit.json archives), not indexed: $(j commit.json archives_not_indexed))"
for i in 1 2; do
  row "recall_$i: memories recalled" "$(j recall_$i.json hits)/$(j recall_$i.json memories)  (degraded $(j recall_$i.json degraded), errors $(j recall_$i.json errors))"
  row "recall_$i: erased user's hits" "$(j erased_$i.json recall_hits) of $(j erased_$i.json erased_memories) erased memories (SQL left: $(j erased_$i.json sql_memories_left) memories, $(j erased_$i.json sql_messages_left) messages)"
  [ "$(j recall_$i.json hits)" = "$(j recall_$i.json memories)" ] && [ "$(j recall_$i.json memories)" -gt 0 ] || PASS=
  [ "$(j recall_$i.json degraded)" = 0 ] && [ "$(j recall_$i.json errors)" = 0 ] || PASS=
  [ "$(j erased_$i.json recall_hits)" = 0 ] && [ "$(j erased_$i.json sql_memories_left)" = 0 ] && [ "$(j erased_$i.json sql_messages_left)" = 0 ] || PASS=
done
[ "$(j erase.json erased_memories)" -gt 0 ] || PASS=
[ "$(j stored.json lost)" = 0 ] && [ "$(j stored.json duplicates)" = 0 ] && [ "$(j stored.json acked)" -gt 0 ] || PASS=
[ "$(j stored.json stored_once)" = "$(j stored.json acked)" ] || PASS=
[ "$(j publish.json acked)" = "$MESSAGES" ] || log "note: not every publish was acked within its retry budget"
row "times" "images ready ${T_IMAGES}s, stack healthy ${T_UP}s, total $(($(date +%s) - T0))s"
echo

# --- 9. scale-out figures (optional) --------------------------------------------------------
if [ -n "${DEPLOY_SCALE_FIGURES:-}" ]; then
  for n in 1 2 3; do
    for i in 1 2 3; do "$DOCKER" stop -t 10 "$(cname ingest "$i")" >/dev/null; done
    lt drain --phase fill --run "scale$n-$RUN" --messages "$MESSAGES" >/dev/null
    lt drain --phase measure --run "scale$n-$RUN" --messages "$MESSAGES" >"$OUT/scale$n.json" &
    m=$!
    sleep 3 # the measurement sees the whole backlog before the replicas start
    for i in $(seq 1 "$n"); do "$DOCKER" start "$(cname ingest "$i")" >/dev/null; done
    sleep 2
    # Where the CPU goes mid-drain (top 5 containers), and the host's load.
    top=$("$DOCKER" stats --no-stream --format '{{.CPUPerc}} {{.Name}}' | sort -rn | head -5 \
      | sed "s/${PROJECT}_//; s/_1\$//" | awk '{printf "%s %s, ", $2, $1}')
    load=$(cut -d' ' -f1 /proc/loadavg)
    wait "$m" || die "scale-out measurement with $n ingest replicas failed"
    row "ingest replicas: $n" "$(printf '%.0f' "$(j "scale$n.json" msg_per_s)") msg/s ($(j "scale$n.json" stored) messages in $(printf '%.1f' "$(j "scale$n.json" seconds)") s; load $load; CPU: ${top%, })"
  done
  for i in 1 2 3; do "$DOCKER" start "$(cname ingest "$i")" >/dev/null; done
  echo
fi

[ -n "$PASS" ] || die "a check failed (table above; outputs in $OUT)"
log "PASS"
