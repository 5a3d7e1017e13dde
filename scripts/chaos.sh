#!/usr/bin/env bash
# make chaos: the fault matrix against a running membus, under bounded load, and one table.
#
# For each target — `membus up` with its embedded defaults (NATS, SQLite), and `membus up` on
# MariaDB and Redis (private instances this script starts on their own ports and data dirs, so
# it can kill them without touching the ones scripts/services.sh runs for the tests) — it:
#   1. starts membus up in a fresh data dir and seeds: one marker fact per tenant account (3),
#      and a user that will be erased mid-run;
#   2. publishes CHAOS_RATE turn messages/s for CHAOS_DURATION from 20 sessions over the bus
#      (deploy/loadtest publish: every publish retried with its Nats-Msg-Id until acked), while
#      it injects, spread over the run:
#        - kill -9 of membus up, then a restart (CHAOS_KILLS times);
#        - a commit killed mid-extraction: sync commits of every session, then kill -9;
#        - MariaDB and Redis killed (kill -9) and restarted mid-load (MariaDB target);
#        - the erased user erased (erase RPC), then its acked turns published again;
#        - duplicate and reordered deliveries: acked turns again, shuffled, with their own
#          Nats-Msg-Id and with new ones, and new sessions whose events go out of order;
#        - malformed and oversized payloads on every subject, RPC and HTTP route (its own account);
#   3. checks: every acked message stored exactly once (SQL), no archive or memory written
#      twice, every session's commit finishing (one waiting for the Redis session lease of a
#      killed process, held until its 10-minute TTL, is reported apart and does not fail the
#      run; any other unfinished commit does), the erased user's data answered nowhere, no
#      account's answers holding another's marker, no good data dead-lettered, every bad
#      payload answered or dead-lettered, membus still up and stopping cleanly;
# then prints one table. Exit 1 when anything was lost, duplicated, leaked, came back or went
# unanswered.
#
# The compose stack of deploy/ (target compose: 3 NATS nodes, MariaDB, Redis, the gateway and
# every service scaled out, as make deploy-test runs it) gets the same load, seeds and checks;
# its kills are `docker kill` of one container at a time, in turn: the NATS node leading the
# turns stream, one replica of each service, the gateway (which answers the auth callout) and
# the summarizer; the commit kill takes both extract replicas; MariaDB and Redis are killed and
# started again; the clean stop is every membus container's exit code after `docker stop`. It is
# a default target when a stack is running (scripts/deploy-test.sh --up, or DEPLOY_KEEP=1);
# naming it in CHAOS_TARGETS with none running brings one up first and takes it down after.
#
# Environment: CHAOS_DURATION (load per target, default 120s), CHAOS_RATE (messages/s, 200),
# CHAOS_KILLS (kill -9 of membus up per target, 3; compose: containers killed, 7: every service
# once), CHAOS_TARGETS (embedded,mariadb, and compose when a stack is running),
# CHAOS_REPLAY (acked turns delivered again, at most; 1000), CHAOS_KEEP=1 (keep the work dir:
# data dirs, logs, loadtest outputs; kept anyway on failure), CHAOS_PORT_BASE (18500: HTTP +0,
# NATS +1, Redis +2, MariaDB +3).
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
DURATION=${CHAOS_DURATION:-120s}
DURATION=${DURATION%s}
RATE=${CHAOS_RATE:-200}
KILLS=${CHAOS_KILLS:-3}
TARGETS=${CHAOS_TARGETS:-embedded,mariadb}
PORT=${CHAOS_PORT_BASE:-18500}
HTTP_ADDR=127.0.0.1:$PORT NATS_LISTEN=127.0.0.1:$((PORT + 1)) REDIS_PORT=$((PORT + 2)) MARIADB_PORT=$((PORT + 3))
W=$(mktemp -d /tmp/membus-chaos.XXXXXX)
RUN=c$(date +%s)
STATE=${DEPLOY_STATE:-/var/tmp/membus-deploy} # make deploy-test's: its stack.env reaches the stack
OWN_STACK=

log() { printf '[chaos %4ds] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
case $DURATION in '' | *[!0-9]*) die "CHAOS_DURATION must be seconds (e.g. 60 or 60s), got ${CHAOS_DURATION:-}" ;; esac

MPID='' RPID=''
cleanup() {
  local rc=$?
  set +e
  [ -n "$MPID" ] && kill -9 "$MPID" 2>/dev/null
  [ -n "$RPID" ] && kill -9 "$RPID" 2>/dev/null
  [ -f "$W/mysql.pid" ] && kill -9 "$(cat "$W/mysql.pid")" 2>/dev/null
  [ -n "$OWN_STACK" ] && bash scripts/deploy-test.sh --down >"$W/deploy-down.log" 2>&1
  # The publisher and any other loadtest still running (a failed run stops mid-load).
  local j
  for j in $(jobs -p); do pkill -P "$j" 2>/dev/null; kill "$j" 2>/dev/null; done
  wait 2>/dev/null
  if [ -n "${CHAOS_KEEP:-}" ] || [ "$rc" != 0 ]; then
    log "work dir kept: $W (membus logs: $W/*/membus.log)"
  else
    rm -rf "$W"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for p in "$PORT" $((PORT + 1)) "$REDIS_PORT" "$MARIADB_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    die "port $p is taken: set CHAOS_PORT_BASE to a free range (it uses 4 ports from it)"
  fi
done

log "building membus and deploy/loadtest (scripts/harness-bin.sh)"
BIN=$(bash scripts/harness-bin.sh "$W/bin")
MEMBUS=$BIN/membus LOADTEST=$BIN/loadtest

# membus up's settings for every target: its own ports, a low commit threshold (commits run all
# through the load), a rate limit the HTTP abuse does not hit, the hash embedder (no model).
export MEMBUS_HTTP_ADDR=$HTTP_ADDR MEMBUS_NATS_LISTEN=$NATS_LISTEN MEMBUS_COMMIT_TOKEN_THRESHOLD=2000 \
  MEMBUS_RATE_LIMIT=100000 MEMBUS_RATE_BURST=100000 MEMBUS_EMBEDDER=hash MEMBUS_LOG_FORMAT=json MEMBUS_LOG_LEVEL=warn \
  MEMBUS_IDLE_COMMIT=0
unset MEMBUS_NATS_URL MEMBUS_NATS_TOKEN MEMBUS_MYSQL_DSN MEMBUS_REDIS_URL MEMBUS_QDRANT_URL MEMBUS_INSECURE_NO_AUTH

# --- private Redis and MariaDB (the MariaDB target) ---------------------------------------------
start_redis() {
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no --dir "$W" >"$W/redis.log" 2>&1 &
  RPID=$!
  for _ in $(seq 1 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "redis did not start (log: $W/redis.log)"
}
start_mariadb() {
  /usr/sbin/mariadbd --no-defaults --user=root --datadir="$W/mysql" --socket="$W/mysql.sock" --pid-file="$W/mysql.pid" \
    --port="$MARIADB_PORT" --bind-address=127.0.0.1 --skip-log-bin --innodb-buffer-pool-size=64M \
    --log-error="$W/mariadb.log" >/dev/null 2>&1 &
  for _ in $(seq 1 150); do mysqladmin --no-defaults -S "$W/mysql.sock" -uroot ping >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "mariadb did not start (log: $W/mariadb.log)"
}
setup_backends() {
  if ! command -v redis-server >/dev/null || [ ! -x /usr/sbin/mariadbd ]; then
    log "installing Redis and MariaDB (scripts/services.sh)"
    bash scripts/services.sh >/dev/null
  fi
  log "private Redis on :$REDIS_PORT and MariaDB on :$MARIADB_PORT (data in $W)"
  mariadb-install-db --no-defaults --user=root --datadir="$W/mysql" --skip-test-db >"$W/mariadb-install.log" 2>&1 \
    || { tail -20 "$W/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
  start_mariadb
  mysql --no-defaults -S "$W/mysql.sock" -uroot <<SQL
CREATE DATABASE membus CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER 'membus'@'127.0.0.1' IDENTIFIED BY 'membus';
GRANT ALL PRIVILEGES ON membus.* TO 'membus'@'127.0.0.1';
SQL
  start_redis
}

# --- membus up -----------------------------------------------------------------------------------
start_membus() {
  "$MEMBUS" up >>"$DATA/membus.out" 2>>"$DATA/membus.log" &
  MPID=$!
  for _ in $(seq 1 300); do
    curl -fs "http://$HTTP_ADDR/readyz" >/dev/null 2>&1 && return 0
    kill -0 "$MPID" 2>/dev/null || break
    sleep 0.2
  done
  tail -20 "$DATA/membus.log" >&2
  die "membus up did not become ready (log: $DATA/membus.log)"
}
kill9() { # kill -9 membus up (compose: one container), note what it left mid-extraction, restart it
  if [ "$T" = compose ]; then
    kill_container
    return
  fi
  kill -9 "$MPID" 2>/dev/null
  wait "$MPID" 2>/dev/null || true
  local n
  n=$(lt inflight | jget - archived extracted)
  INFLIGHT=$((INFLIGHT + n))
  KILLED=$((KILLED + 1))
  log "kill -9 membus up ($KILLED): $n archives caught mid-commit; restarting"
  start_membus
}

# ltx SUBCOMMAND [flags]: deploy/loadtest against the target's bus (compose: in a container on
# the stack's network, the work dir mounted at the same path); lt adds the SQL store and the run.
ltx() {
  if [ "$T" = compose ]; then
    docker run --rm --label membus.deploy-test=1 --network "$NET" -v "$DATA:$DATA" membus/loadtest "$1" --token "$MEMBUS_NATS_TOKEN" "${@:2}"
  else
    "$LOADTEST" "$1" --nats "nats://$NATS_LISTEN" --token "$(cat "$DATA/nats.token")" "${@:2}"
  fi
}
lt() { ltx "$1" --dsn "$DSN" --run "$RUN" "${@:2}"; }
keys_create() {
  if [ "$T" = compose ]; then
    docker exec "${P}_gateway_1" membus keys create "$@" | tr -d '\r'
  else
    "$MEMBUS" keys create "$@"
  fi
}
# jget FILE KEY...: the sum of the numeric top-level KEYs of the last JSON line of FILE (- stdin).
jget() {
  local f=$1
  shift
  python3 -c '
import json, sys
line = [l for l in open(sys.argv[1] if sys.argv[1] != "-" else 0).read().splitlines() if l.startswith("{")][-1]
d = json.loads(line)
print(sum(int(d.get(k) or 0) for k in sys.argv[2:]))' "$f" "$@"
}
lease_pttl() { # the remaining ms of a Redis key (the session lease of a killed process)
  if [ "$T" = compose ]; then
    docker exec "${P}_redis_1" redis-cli -a "$MEMBUS_REDIS_PASSWORD" --no-auth-warning pttl "$1"
  else
    redis-cli -p "$REDIS_PORT" pttl "$1"
  fi
}
elapsed() { echo $(($(date +%s) - LOAD0)); }
alive() { # membus up must be running between the kills: exiting on its own is a crash
  if [ "$T" = compose ]; then
    local down
    down=$(docker ps -a --filter "label=com.docker.compose.project=$P" --filter status=exited --filter status=dead --format '{{.Names}}')
    [ -z "$down" ] || die "containers down that this script did not kill: $down (docker logs)"
    return
  fi
  kill -0 "$MPID" 2>/dev/null || die "membus up (pid $MPID) exited on its own mid-run (not killed by this script): $DATA/membus.log"
}
at() { # at SECONDS: wait until the load has run that long (or the publisher ended), killing
  # membus up when a kill is due; progress every 10 s
  while [ "$(elapsed)" -lt "$1" ] && kill -0 "$PUB" 2>/dev/null; do
    alive
    if [ "$K" -lt "$kills" ] && [ "$(elapsed)" -ge "$NEXT_KILL" ]; then
      kill9
      K=$((K + 1)) NEXT_KILL=$((NEXT_KILL + DURATION / (kills + 1)))
    fi
    if [ "$(elapsed)" -ge "$NEXT_PROGRESS" ]; then
      log "  load ${NEXT_PROGRESS}s/${DURATION}s: $(grep -o 'acked=[0-9]*' "$DATA/publish.err" 2>/dev/null | tail -1 || true) messages"
      NEXT_PROGRESS=$((NEXT_PROGRESS + 10))
    fi
    sleep 0.5
  done
}

# --- the compose stack -------------------------------------------------------------------------------
stack_running() {
  # shellcheck disable=SC1091
  command -v docker >/dev/null && [ -f "$STATE/stack.env" ] \
    && (. "$STATE/stack.env" && docker ps -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
      --filter label=com.docker.compose.service=gateway 2>/dev/null | grep -q .)
}
compose_setup() {
  if ! stack_running; then
    log "[compose] no stack running: bringing one up (scripts/deploy-test.sh --up, a few minutes; log $W/deploy-up.log)"
    OWN_STACK=1
    bash scripts/deploy-test.sh --up >"$W/deploy-up.log" 2>&1 || { tail -20 "$W/deploy-up.log" >&2; die "deploy-test.sh --up failed"; }
  fi
  # shellcheck disable=SC1091
  . "$STATE/stack.env"
  P=$COMPOSE_PROJECT_NAME NET=${COMPOSE_PROJECT_NAME}_default
  DSN="membus:$MEMBUS_DB_PASSWORD@tcp(mariadb:3306)/membus?parseTime=true"
  # One of each, in turn: nats is the turns stream's leader at the time of the kill.
  VICTIMS=(nats ingest_1 extract_1 recall_1 gateway_1 summarizer_1 ingest_2 extract_2 recall_2)
}
healthy() { # healthy CONTAINER...: wait (≤ 180 s) until each one's health check passes
  local c
  for c in "$@"; do
    for _ in $(seq 1 360); do
      [ "$(docker inspect -f '{{.State.Health.Status}}' "$c" 2>/dev/null)" = healthy ] && continue 2
      sleep 0.5
    done
    docker logs --tail 20 "$c" >&2
    die "$c not healthy 180 s after its restart"
  done
}
restart_after() { # restart_after SECONDS CONTAINER...: start the killed containers again, healthy
  sleep "$1"
  docker start "${@:2}" >/dev/null
  healthy "${@:2}"
}
kill_container() {
  local v=${VICTIMS[$((VICTIM_I % ${#VICTIMS[@]}))]} n name
  VICTIM_I=$((VICTIM_I + 1))
  name=$v
  if [ "$v" = nats ]; then
    v=$(lt leader 2>/dev/null | grep -o 'nats-[123]' || echo nats-2)_1
    name="${v%_1} (turns leader)"
  fi
  docker kill "${P}_$v" >/dev/null
  n=$(lt inflight | jget - archived extracted)
  INFLIGHT=$((INFLIGHT + n))
  KILLED=$((KILLED + 1))
  KILLED_NAMES+="${KILLED_NAMES:+, }$name"
  log "docker kill $name ($KILLED): $n archives caught mid-commit; starting it again"
  restart_after 2 "${P}_$v"
}
compose_stop() { # docker stop every membus container: each must exit 0 (then start it again)
  local c code rc=0 cs
  cs=$(docker ps --filter "label=com.docker.compose.project=$P" --format '{{.Names}}' | grep -E "^${P}_(gateway|ingest|extract|recall|summarizer)_" | sort)
  # shellcheck disable=SC2086
  docker stop -t 30 $cs >/dev/null
  for c in $cs; do
    code=$(docker inspect -f '{{.State.ExitCode}}' "$c")
    [ "$code" = 0 ] || { rc=$code; log "$c exited $code on docker stop"; }
  done
  # shellcheck disable=SC2086
  [ -n "$OWN_STACK" ] || { docker start $cs >/dev/null; healthy $cs; }
  return "$rc"
}

declare -A R # results: R[<target>,<row>]
run_target() {
  local t=$1
  T=$t
  DATA=$W/$t
  mkdir -p "$DATA"
  export MEMBUS_DATA_DIR=$DATA
  DSN=sqlite:$DATA/membus.db
  LT_HTTP=http://$HTTP_ADDR HOST_HTTP=http://$HTTP_ADDR
  unset MEMBUS_MYSQL_DSN MEMBUS_REDIS_URL
  if [ "$t" = compose ]; then
    compose_setup
    LT_HTTP=http://gateway:8080 HOST_HTTP=http://127.0.0.1:$MEMBUS_GATEWAY_PORT
  elif [ "$t" = mariadb ]; then
    setup_backends
    export MEMBUS_MYSQL_DSN="membus:membus@tcp(127.0.0.1:$MARIADB_PORT)/membus?parseTime=true&multiStatements=true"
    export MEMBUS_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
    DSN=$MEMBUS_MYSQL_DSN
  fi
  INFLIGHT=0 KILLED=0 KILLED_NAMES='' VICTIM_I=0
  local f kills=$KILLS
  [ "$t" = compose ] && kills=${CHAOS_KILLS:-7}
  for f in kill commitkill mariadb redis erase dup reorder erased_replay bad; do R[$t,f_$f]=-; done
  if [ "$t" = compose ]; then
    log "[$t] the compose stack $P: gateway on $HOST_HTTP, $(docker ps -q --filter "label=com.docker.compose.project=$P" | wc -l) containers"
  else
    log "[$t] membus up on http://$HTTP_ADDR, nats://$NATS_LISTEN"
    start_membus
  fi

  # Keys: one user key per tenant account, a user and an admin key of the abuse account.
  : >"$DATA/keys.txt"
  for i in 1 2 3; do echo "$RUN-t$i $(keys_create --account "$RUN-t$i" --user u1 --role user)" >>"$DATA/keys.txt"; done
  local akey adkey
  akey=$(keys_create --account "$RUN-abuse" --user u1 --role user)
  adkey=$(keys_create --account "$RUN-abuse" --role admin)

  log "[$t] seeding: a marker fact in each of 3 accounts; the user to erase (2 sessions, committed)"
  lt tenants --phase seed --accounts 3 >"$DATA/tenants-seed.json"
  ltx publish --run "e$RUN" --messages 200 --sessions 2 --users 1 \
    --rate 0 --fact-every 2 --out "$DATA/erased-acked.txt" >"$DATA/erased-publish.json" 2>/dev/null
  ltx commit --dsn "$DSN" --run "e$RUN" >"$DATA/erased-commit.json"

  local msgs=$((RATE * DURATION))
  log "[$t] load: $msgs messages from 20 sessions at $RATE msg/s for ${DURATION}s, faults spread over it"
  LOAD0=$(date +%s) NEXT_PROGRESS=10
  lt publish --messages "$msgs" --sessions 20 --users 5 --rate "$RATE" --give-up 3m --out "$DATA/acked.txt" \
    >"$DATA/publish.json" 2>"$DATA/publish.err" &
  PUB=$!
  # The schedule, in fractions of the run; CHAOS_KILLS kills evenly spaced in between (at).
  K=0 NEXT_KILL=$((DURATION / (kills + 1)))
  local step
  for step in erase abuse mariadb replay redis commitkill; do
    case $step in
      erase) at $((DURATION * 15 / 100)) ;;
      abuse) at $((DURATION * 30 / 100)) ;;
      mariadb) at $((DURATION * 40 / 100)) ;;
      replay) at $((DURATION * 50 / 100)) ;;
      redis) at $((DURATION * 60 / 100)) ;;
      commitkill) at $((DURATION * 70 / 100)) ;;
    esac
    case $step in
      erase)
        lt erase --run "e$RUN" --user "e$RUN-u00" --memories "$DATA/erased.json" >"$DATA/erase.json" 2>"$DATA/erase.err" || die "erase failed: $(cat "$DATA/erase.err")"
        log "[$t] erased user e$RUN-u00 ($(jget "$DATA/erase.json" erased_memories) memories) mid-load"
        R[$t,f_erase]=1
        ;;
      abuse)
        log "[$t] malformed and oversized payloads on every subject, RPC and HTTP route"
        lt abuse --account "$RUN-abuse" --http "$LT_HTTP" --key "$akey" --admin-key "$adkey" >"$DATA/abuse.json" 2>"$DATA/abuse.err" \
          || die "abuse failed: $(tail -5 "$DATA/abuse.err")"
        R[$t,f_bad]=$(jget "$DATA/abuse.json" turns_acked commits_acked events_acked events_other_acked metrics_published turns_refused_max_payload \
          commits_refused_max_payload rpc_error_answers rpc_ok_answers rpc_no_answer http_2xx http_4xx http_413 http_readyz_503 http_5xx http_no_answer)
        ;;
      mariadb)
        [ "$t" != embedded ] || continue
        log "[$t] kill -9 MariaDB mid-load; restart in 5 s"
        if [ "$t" = compose ]; then
          docker kill "${P}_mariadb_1" >/dev/null
          restart_after 5 "${P}_mariadb_1"
        else
          kill -9 "$(cat "$W/mysql.pid")"
          sleep 5
          start_mariadb
        fi
        R[$t,f_mariadb]=1
        ;;
      replay)
        log "[$t] duplicate and reordered deliveries; the erased user's turns again"
        lt replay --in "$DATA/acked.txt" --users 5 --limit "${CHAOS_REPLAY:-1000}" --first-session 20 --new-sessions 5 --reorder 20 \
          --out "$DATA/reordered.txt" >"$DATA/replay.json" 2>"$DATA/replay.err" || die "replay failed: $(tail -5 "$DATA/replay.err")"
        ltx replay --run "e$RUN" --in "$DATA/erased-acked.txt" \
          --users 1 --out "$DATA/erased-reordered.txt" >"$DATA/erased-replay.json" 2>>"$DATA/replay.err" || die "replay of the erased user failed"
        R[$t,f_dup]="$(jget "$DATA/replay.json" replayed_same_id replayed_new_id) ($(jget "$DATA/replay.json" jetstream_duplicates) JetStream dedup hits)"
        R[$t,f_reorder]=$(jget "$DATA/replay.json" reordered_events)
        R[$t,f_erased_replay]=$(jget "$DATA/erased-replay.json" replayed_same_id replayed_new_id)
        ;;
      redis)
        [ "$t" != embedded ] || continue
        if [ "$t" = compose ]; then
          log "[$t] kill -9 Redis mid-load; restart in 3 s (its append-only file kept)"
          docker kill "${P}_redis_1" >/dev/null
          restart_after 3 "${P}_redis_1"
        else
          log "[$t] kill -9 Redis mid-load; restart in 3 s (empty: no persistence)"
          kill -9 "$RPID"
          wait "$RPID" 2>/dev/null || true
          sleep 3
          start_redis
        fi
        R[$t,f_redis]=1
        ;;
      commitkill)
        log "[$t] a commit killed mid-extraction: sync commits of every session, kill -9 under them"
        lt commit --id killed- >/dev/null 2>&1 &
        local cpid=$!
        sleep "0.$((RANDOM % 7 + 3))"
        if [ "$t" = compose ]; then # both extract replicas, which run the commits
          docker kill "${P}_extract_1" "${P}_extract_2" >/dev/null
          local n
          n=$(lt inflight | jget - archived extracted)
          INFLIGHT=$((INFLIGHT + n)) KILLED=$((KILLED + 2))
          KILLED_NAMES+="${KILLED_NAMES:+, }extract_1 + extract_2 (under commits)"
          log "[$t] docker kill extract_1 extract_2 under the commits: $n archives caught mid-commit"
          restart_after 2 "${P}_extract_1" "${P}_extract_2"
        else
          kill9
        fi
        pkill -P "$cpid" 2>/dev/null || true # the loadtest under the backgrounded lt (gone already: fine)
        kill "$cpid" 2>/dev/null || true
        wait "$cpid" 2>/dev/null || true
        R[$t,f_commitkill]=1
        ;;
    esac
  done
  at "$DURATION"
  while [ "$K" -lt "$kills" ]; do # the publisher ended early: the kills still due
    kill9
    K=$((K + 1))
  done
  while kill -0 "$PUB" 2>/dev/null; do alive; sleep 0.5; done
  wait "$PUB" || { tail -5 "$DATA/publish.err" >&2; die "publish failed"; }
  log "[$t] load done: $(cat "$DATA/publish.json")"
  # The erased user's turns once more, after every crash.
  ltx replay --run "e$RUN" --in "$DATA/erased-acked.txt" \
    --users 1 --out "$DATA/erased-reordered.txt" >"$DATA/erased-replay2.json" 2>>"$DATA/replay.err"
  R[$t,f_erased_replay]=$((R[$t,f_erased_replay] + $(jget "$DATA/erased-replay2.json" replayed_same_id replayed_new_id)))

  log "[$t] checking: every acked message stored once (waits for ingest to drain)"
  lt stored --in "$DATA/acked.txt,$DATA/reordered.txt" --wait 3m >"$DATA/stored.json" 2>"$DATA/stored.err" || die "stored check: $(cat "$DATA/stored.err")"
  # Every session committed once more (wait:true): what a crash left mid-commit must resume.
  log "[$t] checking: every session committed once more (wait:true)"
  lt commit --tries 2 --timeout 45s >"$DATA/commit.json" 2>"$DATA/commit.err" || log "[$t] final commits: $(jget "$DATA/commit.json" failed) failed"
  # A commit blocked by the session lease of a process killed -9 (Redis: held until its TTL,
  # 10 minutes) is told apart from one that is stuck for no reason.
  local blocked=0 stuck=0 s
  for s in $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(sorted(set(d["failed_sessions"]) | set(d["unindexed_sessions"]))))' "$DATA/commit.json"); do
    if [ "$t" != embedded ] && [ "$(lease_pttl "membus:lock:session:loadtest:$s")" -gt 0 ]; then
      blocked=$((blocked + 1))
    else
      stuck=$((stuck + 1))
    fi
  done
  log "[$t] checking: the erased user, the tenants, the dead letters"
  lt erase --check-only --run "e$RUN" --user "e$RUN-u00" --memories "$DATA/erased.json" >"$DATA/erased-check.json"
  lt tenants --phase check --accounts 3 --http "$LT_HTTP" --keys "$DATA/keys.txt" >"$DATA/tenants.json" 2>"$DATA/tenants.err" \
    || die "tenants check: $(tail -5 "$DATA/tenants.err")"
  lt dlq --expected "$RUN-abuse" >"$DATA/dlq.json"
  local alive=yes stop=0
  curl -fs "$HOST_HTTP/healthz" >/dev/null || alive=no
  if [ "$t" = compose ]; then
    alive=$([ "$alive" = yes ] && bash scripts/deploy-wait.sh 60 2>/dev/null && echo yes || echo no)
    compose_stop || stop=$?
  else
    kill -TERM "$MPID"
    wait "$MPID" || stop=$?
    MPID=
  fi
  if [ "$t" = mariadb ]; then
    kill -9 "$RPID" "$(cat "$W/mysql.pid")" 2>/dev/null
    wait 2>/dev/null || true
    RPID=
    rm -f "$W/mysql.pid"
  fi

  # --- the results ------------------------------------------------------------------------------
  R[$t,f_kill]=$KILLED
  # Every injection once: each kill (the one under the commits included), outage, erasure,
  # duplicate or reordered delivery and bad payload.
  R[$t,nfaults]=$(python3 -c 'import sys; print(sum(int(a.split()[0]) for a in sys.argv[1:] if a[0].isdigit()))' \
    "${R[$t,f_kill]}" "${R[$t,f_mariadb]}" "${R[$t,f_redis]}" "${R[$t,f_erase]}" "${R[$t,f_dup]}" "${R[$t,f_reorder]}" "${R[$t,f_erased_replay]}" "${R[$t,f_bad]}")
  R[$t,acked]=$(jget "$DATA/stored.json" acked)
  R[$t,stored]=$(jget "$DATA/stored.json" stored_once)
  R[$t,dups]=$(jget "$DATA/stored.json" duplicates)
  R[$t,derived]=$(jget "$DATA/stored.json" archive_overlaps memory_duplicates)
  R[$t,lost]=$(jget "$DATA/stored.json" lost)
  R[$t,unacked]=$(jget "$DATA/stored.json" stored_unacked)
  R[$t,inflight]=$INFLIGHT
  R[$t,notindexed]=$stuck
  R[$t,blocked]=$blocked
  R[$t,unfinished]="$(jget "$DATA/commit.json" failed) commits, $(jget "$DATA/commit.json" archives_not_indexed) archives"
  R[$t,dlq_expected]=$(jget "$DATA/dlq.json" expected)
  R[$t,dlq_good]=$(jget "$DATA/dlq.json" good_data)
  R[$t,abuse_turns]=$(jget "$DATA/abuse.json" turns_acked)
  R[$t,dlq_turns]=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["by_stream"].get("turns",0))' "$DATA/dlq.json")
  R[$t,bad_answers]=$(jget "$DATA/abuse.json" http_5xx http_no_answer rpc_no_answer)
  R[$t,came_back]=$(jget "$DATA/erased-check.json" sql_memories_left sql_messages_left sql_archives_left session_answers recall_hits)
  R[$t,erased]=$(jget "$DATA/erased-check.json" erased_memories)
  R[$t,erased_show]="${R[$t,erased]} memories, $(jget "$DATA/erased-check.json" erased_sessions) sessions"
  R[$t,leaks]=$(jget "$DATA/tenants.json" cross_tenant)
  R[$t,answers]=$(jget "$DATA/tenants.json" answers)
  R[$t,alive]=$alive
  R[$t,stop]=$stop
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for r, n in sorted(d["by_reason"].items(), key=lambda x: -x[1]):
    print(f"{n}\t{r}")
for r in d["good_data_reasons"][:10]:
    print(f"GOOD DATA\t{r}")' "$DATA/dlq.json" >"$DATA/dlq-reasons.txt"
  log "[$t] done"
}

compose="not running: skipped (CHAOS_TARGETS=compose brings one up)"
if [ -z "${CHAOS_TARGETS:-}" ] && stack_running; then
  TARGETS=$TARGETS,compose
fi
IFS=',' read -r -a targets <<<"$TARGETS"
for t in "${targets[@]}"; do
  case $t in
    embedded | mariadb | compose) ;;
    *) die "unknown target $t in CHAOS_TARGETS (embedded, mariadb, compose)" ;;
  esac
done
for t in "${targets[@]}"; do
  run_target "$t"
  [ "$t" = compose ] && compose="targeted (${OWN_STACK:+brought up for this run, }killed: $KILLED_NAMES)"
done

# --- one table ---------------------------------------------------------------------------------------
FAIL=()
row() { # row LABEL KEY [suffix]
  printf '%-40s' "$1"
  for t in "${targets[@]}"; do printf ' %-28s' "${R[$t,$2]}${3:-}"; done
  printf '\n'
}
echo
printf '%-40s' "chaos ($RUN, ${DURATION}s per target, $RATE msg/s)"
for t in "${targets[@]}"; do
  case $t in
    embedded) printf ' %-28s' "membus up (embedded)" ;;
    mariadb) printf ' %-28s' "membus up (MariaDB+Redis)" ;;
    compose) printf ' %-28s' "compose stack (deploy/)" ;;
  esac
done
printf '\n'
row "faults injected" nfaults
row "  kill -9 membus up (compose: a container)" f_kill
row "  of them under sync commits" f_commitkill
row "  MariaDB kill -9, restarted after 5 s" f_mariadb
row "  Redis kill -9, restarted" f_redis
row "  a user erased mid-run" f_erase
row "  acked turns delivered again" f_dup
row "  events published out of order" f_reorder
row "  erased user's turns delivered again" f_erased_replay
row "  bad payloads (subjects, RPCs, routes)" f_bad
row "acked (messages)" acked
row "stored exactly once" stored
row "duplicates (messages)" dups
row "duplicates (archives, memories)" derived
row "lost (acked, not stored)" lost
row "stored though never acked" unacked
row "commits caught mid-commit by kill -9" inflight
row "final commits unfinished" unfinished
row "  of their sessions: behind a dead lease" blocked
row "  of their sessions: stuck otherwise" notindexed
row "dead-lettered: bad payloads" dlq_expected
row "  of which turns (bad turns acked)" dlq_turns
row "dead-lettered: good data" dlq_good
row "bad payloads unanswered or 5xx" bad_answers
row "erased mid-run" erased_show
row "erasures that came back" came_back
row "cross-tenant answers" leaks
row "  answers checked" answers
row "membus answering after" alive
row "clean stop (exit code)" stop
# Dead letters by reason, one row per reason, a column per target.
python3 - "${targets[@]/#/$W/}" <<'PY'
import sys
counts = {}
for i, d in enumerate(sys.argv[1:]):
    for line in open(d + "/dlq-reasons.txt"):
        n, r = line.rstrip("\n").split("\t", 1)
        counts.setdefault(r, [0] * (len(sys.argv) - 1))[i] = n
names = " / ".join(d.rstrip("/").rsplit("/", 1)[-1] for d in sys.argv[1:])
print(f"dead letters by reason ({names}):")
for r, ns in sorted(counts.items(), key=lambda x: x[0]):
    print(f"  {r[:78]:80} " + " / ".join(str(n) for n in ns))
PY
printf '%-40s %s\n' "compose stack" "$compose"
printf '%-40s %s\n' "time" "$(($(date +%s) - T0)) s"
echo

for t in "${targets[@]}"; do
  [ "${R[$t,lost]}" = 0 ] || FAIL+=("$t: ${R[$t,lost]} acked messages lost")
  [ "${R[$t,dups]}" = 0 ] && [ "${R[$t,derived]}" = 0 ] || FAIL+=("$t: duplicates")
  [ "${R[$t,stored]}" = "${R[$t,acked]}" ] && [ "${R[$t,acked]}" -gt 0 ] || FAIL+=("$t: stored once ${R[$t,stored]} of ${R[$t,acked]} acked")
  [ "${R[$t,notindexed]}" = 0 ] || FAIL+=("$t: ${R[$t,notindexed]} sessions with a commit that did not finish, and no lease explains it")
  [ "${R[$t,blocked]}" = 0 ] || log "note: $t: ${R[$t,blocked]} sessions wait for the Redis session lease of a killed process (lock.SessionTTL, 10 min) before their commits resume"
  [ "${R[$t,dlq_good]}" = 0 ] || FAIL+=("$t: ${R[$t,dlq_good]} good messages dead-lettered")
  [ "${R[$t,dlq_turns]}" = "${R[$t,abuse_turns]}" ] || FAIL+=("$t: ${R[$t,abuse_turns]} bad turns acked, ${R[$t,dlq_turns]} dead-lettered (silently dropped?)")
  [ "${R[$t,bad_answers]}" = 0 ] || FAIL+=("$t: ${R[$t,bad_answers]} bad payloads got a 5xx or no answer ($W/$t/abuse.err)")
  [ "${R[$t,came_back]}" = 0 ] || FAIL+=("$t: the erased user's data came back (${R[$t,came_back]})")
  [ "${R[$t,erased]}" -gt 0 ] || FAIL+=("$t: the erased user had no memories: the erasure check could not fail")
  [ "${R[$t,leaks]}" = 0 ] || FAIL+=("$t: ${R[$t,leaks]} cross-tenant answers ($W/$t/tenants.err)")
  [ "${R[$t,alive]}" = yes ] && [ "${R[$t,stop]}" = 0 ] || FAIL+=("$t: membus up not answering or not stopping cleanly")
done
if [ ${#FAIL[@]} -gt 0 ]; then
  printf '%s\n' "${FAIL[@]}" >&2
  die "chaos found faults (table above)"
fi
log "PASS"
