package gateway

import "github.com/membus/membus/pkg/runtime"

// FromEnv builds the gateway from a process environment (`membus up` and `membus gateway`).
func FromEnv(env *runtime.Env) (*Service, error) {
	cfg := Defaults()
	cfg.Addr = env.Config.HTTPAddr
	cfg.InsecureNoAuth = env.Config.InsecureNoAuth
	cfg.RateLimit, cfg.RateBurst = float64(env.Config.RateLimit), env.Config.RateBurst
	m := env.Metrics("gateway")
	observe(m, env) // JetStream and SQL gauges: observe_env.go
	deps := Deps{
		NC: env.NC, JS: env.JS, Names: env.Names, Keys: env.Store, Metrics: m,
		Logger: env.Logger.With("service", "gateway"), Ready: env.Probes(), MetricsHandler: env.MetricsHandler(),
	}
	if env.Redis != nil { // a typed nil must not become a non-nil interface
		deps.Redis = env.Redis
	}
	return New(cfg, deps)
}
