#!/usr/bin/env bash
# Installs Debian's chromium when it is missing: the dashboard's browser test drives it
# headless through chromedp (services/membus/systemtest/dashboard_browser_test.go). Idempotent; prints
# MEMBUS_CHROMIUM=<path> for eval, like scripts/services.sh.
set -euo pipefail
bin=""
for c in chromium chromium-browser; do
  if command -v "$c" >/dev/null 2>&1; then bin=$(command -v "$c"); break; fi
done
if [ -z "$bin" ]; then
  echo "chromium.sh: installing chromium from Debian" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >&2
  bin=$(command -v chromium)
fi
echo "chromium.sh: $("$bin" --version 2>/dev/null || echo "$bin")" >&2
echo "export MEMBUS_CHROMIUM=$bin"
