package recall

import "github.com/membus/membus/pkg/runtime"

// FromEnv builds the service from a process environment (`membus up` and `membus recall`).
func FromEnv(env *runtime.Env) (*Service, error) {
	return New(Defaults(), Deps{
		NC: env.NC, Names: env.Names, Store: env.Store, Embedder: env.Embedder, Vectors: env.Vectors,
		Metrics: env.Metrics("recall"), Logger: env.Logger.With("service", "recall"), KickOutbox: env.Relay.Kick,
	})
}
