package recall

import (
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/runtime"
)

// FromEnv builds the service from a process environment (`membus up` and `membus recall`).
func FromEnv(env *runtime.Env) (*Service, error) {
	cfg, err := ConfigFrom(Defaults(), env.Config)
	if err != nil {
		return nil, err
	}
	return New(cfg, Deps{
		NC: env.NC, Names: env.Names, Store: env.Store, Sessions: env.Sessions, Embedder: env.Embedder, Vectors: env.Vectors,
		Metrics: env.Metrics("recall"), Logger: env.Logger.With("service", "recall"), KickOutbox: env.Relay.Kick,
	})
}

// ConfigFrom applies the recall keys of the shared configuration (MEMBUS_RECALL_SCOPES,
// MEMBUS_RECALL_FUSION, MEMBUS_RECALL_DECAY, MEMBUS_RECALL_MMR and their flags) to cfg.
func ConfigFrom(cfg Config, c config.Config) (Config, error) {
	if scopes := config.SplitList(c.RecallScopes); len(scopes) > 0 {
		cfg.DefaultScopes = scopes
	}
	if c.RecallFusion != "" {
		cfg.Fusion = c.RecallFusion
	}
	cfg.Decay, cfg.MMR = c.RecallDecay, c.RecallMMR
	cfg.KeepRecent = c.KeepRecent
	return cfg, cfg.Validate()
}
