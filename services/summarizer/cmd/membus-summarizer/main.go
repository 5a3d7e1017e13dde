// Command membus-summarizer runs the summarizer service alone (the same as `membus summarizer`).
package main

import (
	"os"

	"github.com/membus/membus/pkg/runtime"
	"github.com/membus/membus/services/summarizer"
)

func main() {
	os.Exit(runtime.Main("summarizer", os.Args[1:], func(env *runtime.Env) (runtime.Runnable, error) { return summarizer.FromEnv(env) }))
}
