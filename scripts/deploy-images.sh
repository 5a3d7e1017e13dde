#!/usr/bin/env bash
# make deploy-images: what deploy/docker-compose.offline.yml needs on a machine with no image
# registry, built here from Debian and the Go module proxy:
#   membus/debian:bookworm  a minimal Debian made with debootstrap from apt's own mirror
#   deploy/offline/.build/  the membus binary (make build) and a static nats-server v2.15.2
# `docker-compose -f docker-compose.yml -f docker-compose.offline.yml up --build` then builds
# the rest (NATS, MariaDB, Redis and membus images) from deploy/offline/*.Dockerfile.
#
# usage: deploy-images.sh [--loadtest | --rootfs]
#   --loadtest: also the membus/loadtest image that scripts/deploy-test.sh runs on the compose
#               network
#   --rootfs:   only the debootstrap tree (no Docker daemon needed): a head start for a later run
# Needs a running Docker daemon (DOCKER_HOST is honoured) and root or sudo for debootstrap.
# DEPLOY_STATE (default /var/tmp/membus-deploy) keeps the debootstrap tree between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
ROOT=$PWD
STATE=${DEPLOY_STATE:-/var/tmp/membus-deploy}
LOADTEST= ROOTFS_ONLY=
case "${1:-}" in
  --loadtest) LOADTEST=1 ;;
  --rootfs) ROOTFS_ONLY=1 ;;
  "") ;;
  *) echo "usage: deploy-images.sh [--loadtest | --rootfs]" >&2; exit 2 ;;
esac
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
log() { printf '[deploy-images] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

if ! command -v debootstrap >/dev/null; then
  log "installing debootstrap"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
rootfs() {
  [ -x "$STATE/rootfs/usr/bin/apt-get" ] && return 0
  local mirror
  mirror=$(grep -rhoE '^(deb +|URIs: *)https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
    | grep -m1 -i debian | sed -E 's/^(deb +|URIs: *)//' || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  mkdir -p "$STATE"
  log "debootstrap bookworm from $mirror (about a minute)"
  $SUDO rm -rf "$STATE/rootfs"
  $SUDO debootstrap --variant=minbase bookworm "$STATE/rootfs" "$mirror" >"$STATE/debootstrap.log" 2>&1 \
    || { tail -20 "$STATE/debootstrap.log" >&2; die "debootstrap failed (log: $STATE/debootstrap.log)"; }
}
if [ -n "$ROOTFS_ONLY" ]; then
  rootfs
  log "ready: the Debian tree in $STATE/rootfs"
  exit 0
fi

DOCKER=$(command -v docker || true)
[ -n "$DOCKER" ] || die "no docker command: install Docker (Debian: apt-get install docker.io docker-compose)"
"$DOCKER" info >/dev/null 2>&1 || die "no Docker daemon answers${DOCKER_HOST:+ at $DOCKER_HOST}: start it (systemctl start docker; without systemd: dockerd >/var/log/dockerd.log 2>&1 &) and run again"
if "$DOCKER" image inspect membus/debian:bookworm >/dev/null 2>&1; then
  log "membus/debian:bookworm is there"
else
  rootfs
  log "importing membus/debian:bookworm"
  $SUDO tar -C "$STATE/rootfs" -c . | "$DOCKER" import - membus/debian:bookworm >/dev/null
fi

BUILD=$ROOT/deploy/offline/.build
mkdir -p "$BUILD"
log "building bin/membus"
make -s build >/dev/null
cp bin/membus "$BUILD/membus"
# The tests' static nats-server (built once into the tools cache from the Go module proxy).
nats=$(bash scripts/nats-server.sh 2>/dev/null | sed -n 's/^export MEMBUS_TEST_NATS_SERVER=//p')
[ -x "$nats" ] || die "scripts/nats-server.sh gave no nats-server"
cp "$nats" "$BUILD/nats-server"
if [ -n "$LOADTEST" ]; then
  log "building membus/loadtest"
  (cd deploy/loadtest && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$BUILD/loadtest" .)
  printf 'FROM scratch\nCOPY .build/loadtest /loadtest\nENTRYPOINT ["/loadtest"]\n' >"$BUILD/loadtest.Dockerfile"
  (cd deploy/offline && "$DOCKER" build -q -t membus/loadtest -f .build/loadtest.Dockerfile . >/dev/null)
fi
log "ready: deploy/offline/.build has membus and nats-server; membus/debian:bookworm is imported"
