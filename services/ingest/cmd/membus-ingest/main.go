// Command membus-ingest runs the ingest service alone (the same as `membus ingest`).
package main

import (
	"os"

	"github.com/membus/membus/pkg/runtime"
	"github.com/membus/membus/services/ingest"
)

func main() {
	os.Exit(runtime.Main("ingest", os.Args[1:], func(env *runtime.Env) (runtime.Runnable, error) { return ingest.FromEnv(env) }))
}
