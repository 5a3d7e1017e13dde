#!/usr/bin/env bash
# make deploy-wait: waits until every container of the compose project in deploy/ is healthy
# (docker-compose 1.x has no `up --wait`). On timeout it names the containers that are not and
# prints the end of their logs.
#
# usage: deploy-wait.sh [SECONDS]   (default 240)
# COMPOSE_PROJECT_NAME picks the project (default: deploy, compose's name for the directory).
set -euo pipefail
PROJECT=${COMPOSE_PROJECT_NAME:-deploy}
TIMEOUT=${1:-240}
DOCKER=$(command -v docker) || { echo "deploy-wait: no docker command" >&2; exit 1; }
deadline=$(($(date +%s) + TIMEOUT))
while :; do
  st=$("$DOCKER" ps -a --filter "label=com.docker.compose.project=$PROJECT" --format '{{.Names}} {{.Status}}')
  [ -n "$st" ] || { echo "deploy-wait: no container of project $PROJECT: run docker compose up first" >&2; exit 1; }
  total=$(wc -l <<<"$st")
  healthy=$(grep -c '(healthy)' <<<"$st" || true)
  if [ "$healthy/$total" != "${last:-}" ]; then
    echo "deploy-wait: $healthy/$total containers healthy" >&2
    last=$healthy/$total
  fi
  [ "$healthy" = "$total" ] && exit 0
  if [ "$(date +%s)" -gt "$deadline" ]; then
    grep -v '(healthy)' <<<"$st" >&2
    for c in $(grep -v '(healthy)' <<<"$st" | awk '{print $1}'); do
      echo "== $c" >&2
      "$DOCKER" logs --tail 15 "$c" 2>&1 | sed 's/^/  /' >&2
    done
    echo "deploy-wait: not healthy within ${TIMEOUT}s" >&2
    exit 1
  fi
  sleep 2
done
