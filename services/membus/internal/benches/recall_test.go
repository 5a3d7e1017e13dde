package benches

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/services/membus/internal/harness"
)

// TestBenchRecall runs `membus bench recall` at a tiny size: the command keeps working and
// keeps its docs/design.md §10 output (one line per size, the floor and the ratio beside it).
func TestBenchRecall(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "recall", "--sizes", "50,120", "--count", "5", "--warmup", "1", "--json", "--restart=false"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), stdout.String())
	}
	for i, size := range []float64{50, 120} {
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if m["bench"] != "recall" || m["backend"] != "embedded" || m["size"] != size || m["embedder"] != embed.HashModel {
			t.Errorf("line %d: %v", i, m)
		}
		for _, k := range []string{"ops_per_sec", "p50_ms", "p99_ms", "floor_p50_ms", "floor_p99_ms", "ratio", "rss_mb"} {
			if v, ok := m[k].(float64); !ok || v <= 0 {
				t.Errorf("line %d: %s = %v, want a positive number", i, k, m[k])
			}
		}
	}
	if code := run([]string{"bench", "recall", "--sizes", "10,x"}, &stdout, &stderr); code != 2 {
		t.Errorf("bad --sizes: exit %d, want 2", code)
	}
	stderr.Reset()
	if code := run([]string{"bench", "recall", "--two-people"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--two-people needs --archive") {
		t.Errorf("--two-people without --archive: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"bench", "recall", "--recall-candidates", "201"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--recall-candidates must be between 1 and 200") {
		t.Errorf("bad --recall-candidates: exit %d, stderr %q, want 2 and what is allowed", code, stderr.String())
	}
}

// TestSeedRecallArchive checks what --archive seeds: every memory's source message in SQL,
// archived, and the index holding the memories, one point per message and one session context
// per speaker of each archive, as the projection indexes a committed archive.
func TestSeedRecallArchive(t *testing.T) {
	ctx := context.Background()
	const n = 1500 // two archives: the seeding writes a thousand memories a batch
	tests := []struct {
		archive            bool
		speakers           []string
		messages, points   int
		memories, contexts int
	}{
		{archive: false, messages: 1, points: n, memories: n},
		{archive: true, messages: 1 + n, points: n + n + 2*2, memories: n, contexts: 2 * 2},
		{archive: true, speakers: benchPeople[:], messages: 1 + n, points: n + n + 2*2, memories: n, contexts: 2 * 2},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("archive=%v,speakers=%v", tc.archive, tc.speakers), func(t *testing.T) {
			env, closeEnv, err := harness.OpenIn(ctx, "", "interval", "hash", harness.Backend{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer closeEnv()
			if _, err := seedRecallMemories(ctx, env, "acme", "alice", "main", n, tc.archive, tc.speakers); err != nil {
				t.Fatal(err)
			}
			msgs, err := env.Store.MessagesBySeq(ctx, "acme", "bench-recall-seed", 0, int64(n+10))
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != tc.messages {
				t.Fatalf("%d messages in SQL, want %d", len(msgs), tc.messages)
			}
			for i, m := range msgs[1:] {
				if m.ArchiveID == "" {
					t.Fatalf("message %s (seq %d) not archived", m.MessageID, m.Seq)
				}
				want := ""
				if len(tc.speakers) > 0 {
					want = tc.speakers[i%2]
				}
				if m.Name != want {
					t.Fatalf("message %s (seq %d) said by %q, want the speakers %q in turn", m.MessageID, m.Seq, m.Name, tc.speakers)
				}
			}
			if got, err := env.Vectors.Count(ctx, "acme"); err != nil || got != tc.points {
				t.Fatalf("%d points (err %v), want %d", got, err, tc.points)
			}
			kinds := map[string]int{}
			for after := ""; ; {
				pts, next, err := env.Vectors.Scroll(ctx, vector.Filter{AccountID: "acme", UserID: "alice"}, after, 1000)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range pts {
					kinds[p.Kind]++
					if sp := p.Payload["speaker"]; p.Kind == projection.KindContext && len(tc.speakers) > 0 && !slices.Contains(tc.speakers, sp) {
						t.Errorf("a session context of %q, want one of %q", sp, tc.speakers)
					}
				}
				if next == "" {
					break
				}
				after = next
			}
			if kinds[contract.KindArchive] != tc.messages-1 || kinds[projection.KindContext] != tc.contexts || kinds[contract.KindMemory] != tc.memories {
				t.Errorf("points by kind %v, want %d archived messages, %d contexts, %d memories", kinds, tc.messages-1, tc.contexts, tc.memories)
			}
		})
	}
}
