// Command membus-extract runs the extract service alone (the same as `membus extract`).
package main

import (
	"os"

	"github.com/membus/membus/pkg/runtime"
	"github.com/membus/membus/services/extract"
)

func main() {
	os.Exit(runtime.Main("extract", os.Args[1:], func(env *runtime.Env) (runtime.Runnable, error) { return extract.FromEnv(env) }))
}
