#!/usr/bin/env bash
# make deploy-env: writes deploy/.env from deploy/env.example with a fresh random value for each
# of the four secrets, so `docker compose` in deploy/ has what it refuses to start without.
# An existing deploy/.env is left as it is (delete it to make a new one).
set -euo pipefail
cd "$(dirname "$0")/../deploy"
if [ -e .env ]; then
  echo "deploy/.env exists; left as it is (delete it for fresh secrets)" >&2
  exit 0
fi
umask 077
while IFS= read -r line; do
  case $line in
    *=change-me) printf '%s=%s\n' "${line%%=*}" "$(head -c 24 /dev/urandom | base64 | tr -dc A-Za-z0-9)" ;;
    *) printf '%s\n' "$line" ;;
  esac
done <env.example >.env
echo "wrote deploy/.env with $(grep -c '=change-me$' env.example) fresh secrets" >&2
