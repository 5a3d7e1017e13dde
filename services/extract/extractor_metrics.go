package extract

import (
	"context"
	"time"

	"github.com/membus/membus/pkg/memory"
)

// timedExtractor observes how long each extraction takes (heuristic or LLM) in
// membus_extract_extraction_seconds, apart from the whole commit's extract_commit_seconds.
type timedExtractor struct {
	memory.Extractor
	observe func(float64)
}

func (t timedExtractor) Extract(ctx context.Context, msgs []memory.Message) ([]memory.Candidate, error) {
	start := time.Now()
	defer func() { t.observe(time.Since(start).Seconds()) }()
	return t.Extractor.Extract(ctx, msgs)
}
