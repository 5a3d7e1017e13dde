# Sourced by every script that runs go (and by .ci/run; the Makefile does the same): membus
# builds with the Go of go.work's toolchain line, a newer release than many machines' own Go,
# for its standard library's security fixes (make vulncheck). A machine whose GOTOOLCHAIN is
# local (Debian's Go, and this project's CI machines) ignores that line, so the scripts set
# GOTOOLCHAIN from it and the go command takes that version from the module proxy once (about
# 76 MB, cached in GOMODCACHE). A GOTOOLCHAIN already in the environment wins.
if [ -z "${GOTOOLCHAIN:-}" ]; then
  GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$(dirname "${BASH_SOURCE[0]}")/../go.work")
  export GOTOOLCHAIN
fi
