package harness

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// What the flags of the benches and the eval share: the values of --sync, --progress and
// --cpuprofile read once here, so each command says only what is its own.

// BackendUsage is the help of --backend for a run of the whole system (BackendFlag reads it).
const BackendUsage = "embedded (SQLite, embedded NATS) or real (MEMBUS_MYSQL_DSN, MEMBUS_REDIS_URL, MEMBUS_NATS_URL or an embedded server, MEMBUS_QDRANT_URL or the local index)"

// SyncModes reads --sync: "always" or "interval" is one run, "both" is a run of each.
func SyncModes(flag string) ([]string, error) {
	switch flag {
	case "always", "interval":
		return []string{flag}, nil
	case "both":
		return []string{"always", "interval"}, nil
	}
	return nil, fmt.Errorf("--sync must be always, interval or both, got %q", flag)
}

// Progress is where a run draws its progress bars: stderr when --progress asks for them or
// stderr is a terminal, else nowhere (nil).
func Progress(force bool, stderr io.Writer) io.Writer {
	if force || IsTerminal(stderr) {
		return stderr
	}
	return nil
}

// CPUProfile starts the CPU profile of --cpuprofile (nothing when path is empty); the
// returned stop ends it and closes the file.
func CPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close() // the profile error is the one to report
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close() // a short profile is all that is lost, and the run's result stands
	}, nil
}
