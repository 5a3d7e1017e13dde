package extract

import (
	"github.com/membus/membus/pkg/llm"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/runtime"
)

// FromEnv builds the service from a process environment (`membus up` and `membus extract`).
// With MEMBUS_LLM_BASE_URL set, memories are extracted by the LLM extractor on that endpoint
// (falling back to the heuristic one per batch when it fails); otherwise by the heuristic one.
func FromEnv(env *runtime.Env) (*Service, error) {
	cfg := Defaults()
	cfg.KeepRecent = env.Config.KeepRecent
	m := env.Metrics("extract")
	logger := env.Logger.With("service", "extract")
	var extractor memory.Extractor = memory.NewHeuristic()
	if env.Config.LLMBaseURL != "" {
		client, err := llm.New(llm.Config{BaseURL: env.Config.LLMBaseURL, Model: env.Config.LLMModel, APIKey: env.Config.LLMAPIKey,
			Logger: logger.With("component", "llm")}, m)
		if err != nil {
			return nil, err
		}
		extractor = memory.NewLLM(client, m, memory.WithLogger(logger.With("component", "extractor")))
		logger.Info("memory extraction by LLM", "model", env.Config.LLMModel, "fallback", "heuristic")
	}
	return New(cfg, Deps{
		NC: env.NC, JS: env.JS, Names: env.Names, Store: env.Store, Locker: env.Locker,
		Extractor: extractor, Embedder: env.Embedder, Vectors: env.Vectors,
		Metrics: m, Logger: logger,
		KickOutbox: env.Relay.Kick, Probes: env.Probes()[1:],
	})
}
