#!/usr/bin/env bash
# make deploy-env: writes deploy/.env from deploy/env.example with a fresh random value for each
# of the four secrets, and the values derived from the NATS token — the auth callout's issuer
# and each service's NATS password — so `docker compose` in deploy/ has what it refuses to
# start without. An existing deploy/.env is left as it is (delete it to make a new one), except
# that derived values missing from it are added.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/toolchain.sh"
cd "$root/deploy"

# keys TOKEN ARGS...: `membus keys ARGS` with the token (go run when Go is here, so never a
# stale binary; else bin/membus).
keys() {
  local token=$1
  shift
  if command -v go >/dev/null; then
    (cd "$root" && MEMBUS_NATS_TOKEN=$token go run ./services/membus keys "$@")
  elif [ -x "$root/bin/membus" ]; then
    MEMBUS_NATS_TOKEN=$token "$root/bin/membus" keys "$@"
  else
    echo "deploy-env: the derived NATS values need Go or bin/membus; or set MEMBUS_NATS_AUTH_ISSUER and MEMBUS_NATS_PASS_* in deploy/.env to what \`membus keys nats-issuer\` and \`membus keys nats-passwords\` print with MEMBUS_NATS_TOKEN set" >&2
    return 1
  fi
}

# issuer TOKEN: the public key `membus keys nats-issuer` derives, checked to be an account
# public key.
issuer() {
  local out
  out=$(keys "$1" nats-issuer) || return 1
  if ! [[ $out =~ ^A[A-Z2-7]{55}$ ]]; then
    echo "deploy-env: \`membus keys nats-issuer\` printed no account key (a membus binary older than this checkout?): $out" >&2
    return 1
  fi
  printf '%s\n' "$out"
}

# passwords TOKEN: the MEMBUS_NATS_PASS_<SERVICE>=… lines of `membus keys nats-passwords`,
# checked to be the five services' passwords (mb- and 43 characters of base64url).
passwords() {
  local out
  out=$(keys "$1" nats-passwords) || return 1
  if [ "$(grep -cE '^MEMBUS_NATS_PASS_[A-Z]+=mb-[A-Za-z0-9_-]{43}$' <<<"$out")" != 5 ]; then
    echo "deploy-env: \`membus keys nats-passwords\` printed no five passwords (a membus binary older than this checkout?): $out" >&2
    return 1
  fi
  printf '%s\n' "$out"
}

derived='^MEMBUS_NATS_AUTH_ISSUER=\|^MEMBUS_NATS_PASS_'
if [ -e .env ]; then
  if grep -q '^MEMBUS_NATS_AUTH_ISSUER=[A-Z0-9]\{56\}$' .env && [ "$(grep -c '^MEMBUS_NATS_PASS_[A-Z]*=mb-.\{43\}$' .env)" = 5 ]; then
    echo "deploy/.env exists; left as it is (delete it for fresh secrets)" >&2
    exit 0
  fi
  token=$(sed -n 's/^MEMBUS_NATS_TOKEN=//p' .env)
  [ -n "$token" ] || { echo "deploy-env: deploy/.env has no MEMBUS_NATS_TOKEN" >&2; exit 1; }
  iss=$(issuer "$token")
  pw=$(passwords "$token")
  umask 077
  { grep -v "$derived" .env; printf 'MEMBUS_NATS_AUTH_ISSUER=%s\n%s\n' "$iss" "$pw"; } >.env.new
  mv .env.new .env
  echo "deploy/.env exists; set MEMBUS_NATS_AUTH_ISSUER and the services' MEMBUS_NATS_PASS_* (derived from its token)" >&2
  exit 0
fi
umask 077
token=$(head -c 24 /dev/urandom | base64 | tr -dc A-Za-z0-9)
iss=$(issuer "$token")
pw=$(passwords "$token")
while IFS= read -r line; do
  case $line in
    MEMBUS_NATS_TOKEN=change-me) printf 'MEMBUS_NATS_TOKEN=%s\n' "$token" ;;
    MEMBUS_NATS_AUTH_ISSUER=*) printf 'MEMBUS_NATS_AUTH_ISSUER=%s\n' "$iss" ;;
    MEMBUS_NATS_PASS_*=*) grep "^${line%%=*}=" <<<"$pw" ;;
    *=change-me) printf '%s=%s\n' "${line%%=*}" "$(head -c 24 /dev/urandom | base64 | tr -dc A-Za-z0-9)" ;;
    *) printf '%s\n' "$line" ;;
  esac
done <env.example >.env
echo "wrote deploy/.env with $(grep -c '=change-me$' env.example) fresh secrets and the NATS issuer and service passwords derived from the token" >&2
