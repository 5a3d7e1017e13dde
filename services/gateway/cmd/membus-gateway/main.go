// Command membus-gateway runs the gateway service alone (the same as `membus gateway`).
package main

import (
	"os"

	"github.com/membus/membus/pkg/runtime"
	"github.com/membus/membus/services/gateway"
)

func main() {
	os.Exit(runtime.Main("gateway", os.Args[1:], func(env *runtime.Env) (runtime.Runnable, error) { return gateway.FromEnv(env) }))
}
