package eval

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/membus/membus/pkg/contract"
)

func TestTraceWriter(t *testing.T) {
	t.Run("nil writer writes nothing", func(t *testing.T) {
		var w *traceWriter
		if err := w.write("conv-1", locomoQuestion{Question: "q"}, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("one JSON line per question with its gold turns and trace", func(t *testing.T) {
		var buf bytes.Buffer
		w := &traceWriter{w: &buf}
		q := locomoQuestion{Question: "What did Melanie paint?", Category: 4, Evidence: []string{"D1:3"}}
		trace := []contract.TraceEntry{{ID: "a", Scope: contract.ScopeArchive, Score: 0.9, Kept: true, Sources: []string{"D1:3"}}}
		for range 2 {
			if err := w.write("conv-26", q, trace); err != nil {
				t.Fatal(err)
			}
		}
		lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
		if len(lines) != 2 {
			t.Fatalf("%d lines, want 2", len(lines))
		}
		var got traceLine
		if err := json.Unmarshal(lines[0], &got); err != nil {
			t.Fatal(err)
		}
		if got.Conv != "conv-26" || got.Category != 4 || len(got.Evidence) != 1 || len(got.Trace) != 1 || got.Trace[0].Sources[0] != "D1:3" {
			t.Fatalf("line = %+v", got)
		}
	})
}
