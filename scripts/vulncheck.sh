#!/usr/bin/env bash
# make vulncheck: govulncheck over every module of the repository (the workspace's and
# deploy/loadtest), against a vulnerability database built on this machine.
#
# vuln.go.dev is not reachable from every machine this project builds on, but the Go module
# proxy is, and it serves golang.org/x/vulndb — the database's source, one OSV file per entry
# under data/osv. This script downloads a pinned version of it, lays it out as the database
# govulncheck reads with -db file:// (index/db.json, index/modules.json, ID/<id>.json: the
# format of https://go.dev/security/vuln/database), and runs a pinned govulncheck built from
# the proxy. Both are cached in ~/.cache/membus/tools. To take newer advisories, bump
# VULNDB_VERSION to a newer pseudo-version of golang.org/x/vulndb (`go list -m -versions` shows
# none for pseudo-versions: `go list -m golang.org/x/vulndb@master` prints the latest).
#
# Exit status: 0 when no module calls vulnerable code; 3 (govulncheck's) when one does — the
# output names the entry, the module version that fixes it and the call path.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
GOVULNCHECK_VERSION=${GOVULNCHECK_VERSION:-v1.9.0}
CACHE=${MEMBUS_TOOLS_DIR:-$HOME/.cache/membus/tools}
mkdir -p "$CACHE"

# Built by the Go that runs it: govulncheck type-checks the standard library of that Go, which a
# govulncheck built by an older Go cannot read.
BIN=$CACHE/govulncheck-$GOVULNCHECK_VERSION-$(go env GOVERSION)
if [ ! -x "$BIN" ]; then
  echo "[vulncheck] building govulncheck $GOVULNCHECK_VERSION (once)" >&2
  tmp=$(mktemp -d)
  GOBIN=$tmp GOFLAGS=-trimpath go install "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION"
  mv "$tmp/govulncheck" "$BIN"
  rm -rf "$tmp"
fi

DB=$CACHE/vulndb-$VULNDB_VERSION
if [ ! -f "$DB/index/modules.json" ]; then
  echo "[vulncheck] building the vulnerability database from golang.org/x/vulndb@$VULNDB_VERSION (once)" >&2
  src=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  rm -rf "$DB.tmp"
  mkdir -p "$DB.tmp/index" "$DB.tmp/ID"
  python3 - "$src/data/osv" "$DB.tmp" "$VULNDB_VERSION" <<'PY'
import json, os, sys
src, out, version = sys.argv[1:4]
# The pseudo-version's timestamp is the snapshot's: the database's "modified" time.
stamp = version.split("-")[1]
when = f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[8:10]}:{stamp[10:12]}:{stamp[12:14]}Z"
modules = {}
n = 0
for name in sorted(os.listdir(src)):
    if not name.endswith(".json"):
        continue
    with open(os.path.join(src, name)) as f:
        entry = json.load(f)
    # Entries checked in before publication carry a zero time; the index wants a real one.
    for k in ("modified", "published"):
        if entry.get(k, "").startswith("0001-"):
            entry[k] = when
    with open(os.path.join(out, "ID", entry["id"] + ".json"), "w") as f:
        json.dump(entry, f)
    n += 1
    for aff in entry.get("affected", []):
        path = aff.get("package", {}).get("name")
        if not path:
            continue
        # No "fixed" hint: it only lets the client skip fetching an entry, and a wrong one
        # (several ranges) would skip a real finding.
        vuln = {"id": entry["id"], "modified": entry["modified"]}
        vulns = modules.setdefault(path, [])
        if all(v["id"] != entry["id"] for v in vulns):
            vulns.append(vuln)
with open(os.path.join(out, "index", "db.json"), "w") as f:
    json.dump({"modified": when}, f)
with open(os.path.join(out, "index", "modules.json"), "w") as f:
    json.dump([{"path": p, "vulns": v} for p, v in sorted(modules.items())], f)
print(f"[vulncheck] {n} entries for {len(modules)} modules, as of {when}", file=sys.stderr)
PY
  mv "$DB.tmp" "$DB"
fi

rc=0
mods=$(go list -m -f '{{.Dir}}')
for d in $mods deploy/loadtest; do
  echo "== govulncheck ${d#"$PWD"/}" >&2
  if [ "$d" = deploy/loadtest ]; then
    (cd "$d" && GOWORK=off "$BIN" -db "file://$DB" ./...) || rc=$?
  else
    (cd "$d" && "$BIN" -db "file://$DB" ./...) || rc=$?
  fi
done
exit "$rc"
