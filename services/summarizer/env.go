package summarizer

import "github.com/membus/membus/pkg/runtime"

// FromEnv builds the service from a process environment (`membus up` and `membus summarizer`).
func FromEnv(env *runtime.Env) (*Service, error) {
	return New(Defaults(), Deps{
		JS: env.JS, Names: env.Names, Store: env.Store, Locker: env.Locker,
		Metrics: env.Metrics("summarizer"), Logger: env.Logger.With("service", "summarizer"),
		KickOutbox: env.Relay.Kick, Probes: env.Probes()[1:],
	})
}
