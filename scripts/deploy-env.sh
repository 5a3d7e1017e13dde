#!/usr/bin/env bash
# make deploy-env: writes deploy/.env from deploy/env.example with a fresh random value for each
# of the four secrets, and the NATS auth callout's issuer derived from the token, so `docker
# compose` in deploy/ has what it refuses to start without. An existing deploy/.env is left as
# it is (delete it to make a new one), except that an issuer missing from it is added.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/deploy"

# issuer TOKEN: the public key `membus keys nats-issuer` derives (go run when Go is here, so
# never a stale binary; else bin/membus), checked to be an account public key.
issuer() {
  local out
  if command -v go >/dev/null; then
    out=$(cd "$root" && MEMBUS_NATS_TOKEN=$1 go run ./services/membus keys nats-issuer) || return 1
  elif [ -x "$root/bin/membus" ]; then
    out=$(MEMBUS_NATS_TOKEN=$1 "$root/bin/membus" keys nats-issuer) || return 1
  else
    echo "deploy-env: the NATS issuer needs Go or bin/membus; or set MEMBUS_NATS_AUTH_ISSUER in deploy/.env to what \`membus keys nats-issuer\` prints with MEMBUS_NATS_TOKEN set" >&2
    return 1
  fi
  if ! [[ $out =~ ^A[A-Z2-7]{55}$ ]]; then
    echo "deploy-env: \`membus keys nats-issuer\` printed no account key (a membus binary older than this checkout?): $out" >&2
    return 1
  fi
  printf '%s\n' "$out"
}

if [ -e .env ]; then
  if grep -q '^MEMBUS_NATS_AUTH_ISSUER=[A-Z0-9]\{56\}$' .env; then
    echo "deploy/.env exists; left as it is (delete it for fresh secrets)" >&2
    exit 0
  fi
  token=$(sed -n 's/^MEMBUS_NATS_TOKEN=//p' .env)
  [ -n "$token" ] || { echo "deploy-env: deploy/.env has no MEMBUS_NATS_TOKEN" >&2; exit 1; }
  iss=$(issuer "$token")
  grep -v '^MEMBUS_NATS_AUTH_ISSUER=' .env >.env.new
  printf 'MEMBUS_NATS_AUTH_ISSUER=%s\n' "$iss" >>.env.new
  mv .env.new .env
  echo "deploy/.env exists; added MEMBUS_NATS_AUTH_ISSUER (derived from its token)" >&2
  exit 0
fi
umask 077
token=$(head -c 24 /dev/urandom | base64 | tr -dc A-Za-z0-9)
iss=$(issuer "$token")
while IFS= read -r line; do
  case $line in
    MEMBUS_NATS_TOKEN=change-me) printf 'MEMBUS_NATS_TOKEN=%s\n' "$token" ;;
    MEMBUS_NATS_AUTH_ISSUER=*) printf 'MEMBUS_NATS_AUTH_ISSUER=%s\n' "$iss" ;;
    *=change-me) printf '%s=%s\n' "${line%%=*}" "$(head -c 24 /dev/urandom | base64 | tr -dc A-Za-z0-9)" ;;
    *) printf '%s\n' "$line" ;;
  esac
done <env.example >.env
echo "wrote deploy/.env with $(grep -c '=change-me$' env.example) fresh secrets and the NATS issuer derived from the token" >&2
