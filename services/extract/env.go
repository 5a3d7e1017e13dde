package extract

import (
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/runtime"
)

// FromEnv builds the service from a process environment (`membus up` and `membus extract`).
func FromEnv(env *runtime.Env) (*Service, error) {
	cfg := Defaults()
	cfg.KeepRecent = env.Config.KeepRecent
	return New(cfg, Deps{
		NC: env.NC, JS: env.JS, Names: env.Names, Store: env.Store, Locker: env.Locker,
		Extractor: memory.NewHeuristic(), Embedder: env.Embedder, Vectors: env.Vectors,
		Metrics: env.Metrics("extract"), Logger: env.Logger.With("service", "extract"),
		KickOutbox: env.Relay.Kick, Probes: env.Probes()[1:],
	})
}
