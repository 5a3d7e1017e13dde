package gateway

import "github.com/membus/membus/pkg/runtime"

// FromEnv builds the gateway from a process environment (`membus up` and `membus gateway`).
func FromEnv(env *runtime.Env) (*Service, error) {
	cfg := Defaults()
	cfg.Addr = env.Config.HTTPAddr
	cfg.InsecureNoAuth = env.Config.InsecureNoAuth
	m := env.Metrics("gateway")
	return New(cfg, Deps{
		NC: env.NC, JS: env.JS, Names: env.Names, Keys: env.Store, Metrics: m,
		Logger: env.Logger.With("service", "gateway"), Ready: env.Probes(), MetricsHandler: env.MetricsHandler(),
	})
}
