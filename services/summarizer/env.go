package summarizer

import (
	"github.com/membus/membus/pkg/llm"
	"github.com/membus/membus/pkg/runtime"
)

// FromEnv builds the service from a process environment (`membus up` and `membus summarizer`).
// With MEMBUS_LLM_BASE_URL set, overviews and digests are written by the LLM summarizer on that
// endpoint (falling back to the extractive one when it fails); otherwise by the extractive one.
// The schedule runs in MEMBUS_TZ.
func FromEnv(env *runtime.Env) (*Service, error) {
	cfg := Defaults()
	cfg.Location = env.Config.Location()
	m := env.Metrics("summarizer")
	logger := env.Logger.With("service", "summarizer")
	var sum Summarizer = Extractive{}
	if env.Config.LLMBaseURL != "" {
		client, err := llm.New(llm.Config{BaseURL: env.Config.LLMBaseURL, Model: env.Config.LLMModel, APIKey: env.Config.LLMAPIKey,
			Logger: logger.With("component", "llm")}, m)
		if err != nil {
			return nil, err
		}
		sum = NewLLM(client, Extractive{}, m, logger.With("component", "llm-summarizer"))
		logger.Info("summaries by LLM", "model", env.Config.LLMModel, "fallback", "extractive")
	}
	return New(cfg, Deps{
		NC: env.NC, JS: env.JS, Names: env.Names, Store: env.Store, Locker: env.Locker,
		Embedder: env.Embedder, Vectors: env.Vectors, Summarizer: sum,
		Metrics: m, Logger: logger,
		KickOutbox: env.Relay.Kick, Probes: env.Probes()[1:],
	})
}
