package ingest

import (
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/runtime"
)

// FromEnv builds the service from a process environment (`membus up` and `membus ingest`).
func FromEnv(env *runtime.Env) (*Service, error) {
	cfg := Defaults()
	cfg.CommitTokenThreshold = env.Config.CommitTokenThreshold
	cfg.BypassSessionPatterns = config.SplitList(env.Config.BypassSessionPatterns)
	cfg.AgentPrefix = env.Config.AgentPrefix
	cfg.RedactPatterns = config.SplitList(env.Config.RedactPatterns)
	cfg.IdleCommit = env.Config.IdleCommitDuration()
	return New(cfg, Deps{
		JS: env.JS, Names: env.Names, Store: env.Store, Sessions: env.Sessions, Metrics: env.Metrics("ingest"),
		Logger: env.Logger.With("service", "ingest"), KickOutbox: env.Relay.Kick, Probes: env.Probes()[1:],
	})
}
