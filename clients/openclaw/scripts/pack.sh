#!/usr/bin/env bash
# `make plugin`: the OpenClaw plugin as the npm archive users install
# (`openclaw plugins install bin/membus-openclaw-plugin-<version>.tgz`). OpenClaw installs its
# npm dependencies at install time and links its own package as the peer.
set -euo pipefail
plugin="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$(cd "$plugin/../.." && pwd)"
mkdir -p "$root/bin"
cd "$plugin"
name="$(npm pack --pack-destination "$root/bin" --loglevel=error | tail -n 1)"
echo "$root/bin/$name"
