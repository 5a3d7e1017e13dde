package recall

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/membus/membus/pkg/runtime"
)

// FromEnv builds the service from a process environment (`membus up` and `membus recall`).
// The recall switches of SPEC §6 that are off or fixed by default can be set with
// MEMBUS_RECALL_SCOPES (comma-separated default scopes), MEMBUS_RECALL_FUSION (weighted|rrf),
// MEMBUS_RECALL_DECAY and MEMBUS_RECALL_MMR (true|false), MEMBUS_RECALL_ARCHIVE_CONTEXT (lines)
// and MEMBUS_RECALL_SEARCH_TIMEOUT (a Go duration).
func FromEnv(env *runtime.Env) (*Service, error) {
	cfg, err := ConfigFromEnv(Defaults(), os.Getenv)
	if err != nil {
		return nil, err
	}
	return New(cfg, Deps{
		NC: env.NC, Names: env.Names, Store: env.Store, Sessions: env.Sessions, Embedder: env.Embedder, Vectors: env.Vectors,
		Metrics: env.Metrics("recall"), Logger: env.Logger.With("service", "recall"), KickOutbox: env.Relay.Kick,
	})
}

// ConfigFromEnv applies the MEMBUS_RECALL_* variables getenv knows to cfg; a malformed value is
// an error naming the variable.
func ConfigFromEnv(cfg Config, getenv func(string) string) (Config, error) {
	if v := getenv("MEMBUS_RECALL_SCOPES"); v != "" {
		cfg.DefaultScopes = nil
		for _, sc := range strings.Split(v, ",") {
			cfg.DefaultScopes = append(cfg.DefaultScopes, strings.TrimSpace(sc))
		}
	}
	if v := getenv("MEMBUS_RECALL_FUSION"); v != "" {
		cfg.Fusion = v
	}
	for name, dst := range map[string]*bool{"MEMBUS_RECALL_DECAY": &cfg.Decay, "MEMBUS_RECALL_MMR": &cfg.MMR} {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return cfg, fmt.Errorf("%s: %w", name, err)
			}
			*dst = b
		}
	}
	if v := getenv("MEMBUS_RECALL_ARCHIVE_CONTEXT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, fmt.Errorf("MEMBUS_RECALL_ARCHIVE_CONTEXT: %w", err)
		}
		cfg.ArchiveContext = n
	}
	if v := getenv("MEMBUS_RECALL_SEARCH_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return cfg, fmt.Errorf("MEMBUS_RECALL_SEARCH_TIMEOUT: %w", err)
		}
		cfg.SearchTimeout = d
	}
	return cfg, cfg.Validate()
}
