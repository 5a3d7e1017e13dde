package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/membus/membus/pkg/contract"
)

// traceWriter writes `membus eval locomo --trace-out`: one JSON line per question with its
// gold turns and the ranked call's trace (every candidate recall scored, its score parts and
// sources, kept or why not), so a ranking change can be studied on the candidates offline.
type traceWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// traceLine is one question's line.
type traceLine struct {
	Conv     string                `json:"conv"`
	Question string                `json:"question"`
	Category int                   `json:"category"`
	Evidence []string              `json:"evidence"`
	Trace    []contract.TraceEntry `json:"trace"`
}

// write writes one question's line; a nil writer writes nothing.
func (t *traceWriter) write(conv string, q locomoQuestion, trace []contract.TraceEntry) error {
	if t == nil {
		return nil
	}
	b, err := json.Marshal(traceLine{Conv: conv, Question: q.Question, Category: q.Category, Evidence: q.Evidence, Trace: trace})
	if err != nil {
		return fmt.Errorf("trace line: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err = t.w.Write(append(b, '\n'))
	return err
}
