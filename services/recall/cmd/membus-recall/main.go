// Command membus-recall runs the recall service alone (the same as `membus recall`).
package main

import (
	"os"

	"github.com/membus/membus/pkg/runtime"
	"github.com/membus/membus/services/recall"
)

func main() {
	os.Exit(runtime.Main("recall", os.Args[1:], func(env *runtime.Env) (runtime.Runnable, error) { return recall.FromEnv(env) }))
}
