package recall

import (
	"github.com/membus/membus/pkg/config"
)

// ConfigFrom applies the recall keys of the shared configuration (MEMBUS_RECALL_SCOPES,
// MEMBUS_RECALL_FUSION, MEMBUS_RECALL_DECAY, MEMBUS_RECALL_MMR, MEMBUS_RECALL_PERSON_QUERIES, MEMBUS_RECALL_CANDIDATES and their
// flags)
// to cfg.
func ConfigFrom(cfg Config, c config.Config) (Config, error) {
	if scopes := config.SplitList(c.RecallScopes); len(scopes) > 0 {
		cfg.DefaultScopes = scopes
	}
	if c.RecallFusion != "" {
		cfg.Fusion = c.RecallFusion
	}
	cfg.Decay, cfg.MMR, cfg.PersonQueries = c.RecallDecay, c.RecallMMR, c.RecallPersonQueries
	if c.RecallCandidates > 0 {
		cfg.CandidatesPerSide = c.RecallCandidates
	}
	cfg.KeepRecent = c.KeepRecent
	return cfg, cfg.Validate()
}
