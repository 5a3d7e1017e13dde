package memory_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/membus/membus/pkg/llm"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
)

// llmStub is an OpenAI-compatible endpoint; answer decides the n-th (1-based) reply.
func llmStub(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) (*llm.Client, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(int(calls.Add(1)), w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "stub", Timeout: 200 * time.Millisecond, MaxAttempts: 3,
		Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, &calls
}

func reply(w http.ResponseWriter, content string) {
	_ = json.NewEncoder(w).Encode(map[string]any{
		"choices": []map[string]any{{"message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20},
	})
}

const goodAnswer = `{"memories": [
  {"category": "profile", "scope": "user", "subject": "Caroline", "attribute": "lives in", "polarity": 1, "value": "Boston",
   "text": "I live in Boston.", "abstract": "Caroline lives in Boston.", "importance": 0.9, "sources": ["m1"]},
  {"category": "event", "scope": "user", "subject": "Caroline", "value": "ran a marathon", "text": "Caroline ran a marathon.",
   "event_time": "2023-05-07", "sources": ["m2", "made-up-id"]},
  {"category": "bogus", "text": "dropped: unknown category", "sources": ["m1"]}
]}`

func TestLLMExtractor(t *testing.T) {
	msgs := []memory.Message{
		{ID: "m1", Role: "user", Name: "Caroline", Text: "I live in Boston.", CreatedAt: tableAt},
		{ID: "m2", Role: "user", Name: "Caroline", Text: "I ran a marathon yesterday.", CreatedAt: tableAt},
	}
	cases := []struct {
		name      string
		answer    func(n int, w http.ResponseWriter, r *http.Request)
		extractor string // which ran, per the report and the candidates
		reason    string // fallback reason counted, "" when none
		calls     int32
	}{
		{"good JSON is used", func(n int, w http.ResponseWriter, r *http.Request) { reply(w, goodAnswer) }, "llm", "", 1},
		{"JSON in a code fence is used", func(n int, w http.ResponseWriter, r *http.Request) { reply(w, "```json\n"+goodAnswer+"\n```") }, "llm", "", 1},
		{"malformed JSON falls back", func(n int, w http.ResponseWriter, r *http.Request) { reply(w, `{"memories": [{"category": "profile",`) }, "heuristic", memory.FallbackGarbage, 1},
		{"prose falls back", func(n int, w http.ResponseWriter, r *http.Request) { reply(w, "Sure! Caroline lives in Boston.") }, "heuristic", memory.FallbackGarbage, 1},
		{"JSON off the schema falls back", func(n int, w http.ResponseWriter, r *http.Request) {
			reply(w, `{"memories": [{"category": "profile", "text": "x", "sources": ["m1"], "polarity": 7}]}`)
		}, "heuristic", memory.FallbackGarbage, 1},
		{"a JSON object without memories falls back", func(n int, w http.ResponseWriter, r *http.Request) { reply(w, `{"result": "ok"}`) }, "heuristic", memory.FallbackGarbage, 1},
		{"timeouts fall back after the retries", func(n int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}, "heuristic", memory.FallbackEndpoint, 3},
		{"429 then success uses the model", func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				http.Error(w, "rate limited", http.StatusTooManyRequests)
				return
			}
			reply(w, goodAnswer)
		}, "llm", "", 2},
		{"500s fall back after the retries", func(n int, w http.ResponseWriter, r *http.Request) {
			http.Error(w, "down", http.StatusInternalServerError)
		},
			"heuristic", memory.FallbackEndpoint, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client, calls := llmStub(t, tc.answer)
			m := metrics.New("test", "t")
			x := memory.NewLLM(client, m)
			got, rep, err := x.ExtractReport(context.Background(), msgs)
			if err != nil {
				t.Fatalf("extract: %v", err)
			}
			if rep.Extractor != tc.extractor {
				t.Fatalf("report says %q ran, want %q (%+v)", rep.Extractor, tc.extractor, rep)
			}
			if n := calls.Load(); n != tc.calls {
				t.Fatalf("%d calls to the endpoint, want %d", n, tc.calls)
			}
			fallbacks := m.Snapshot(time.Now()).Counters
			for _, r := range []string{memory.FallbackGarbage, memory.FallbackEndpoint} {
				want := 0.0
				if r == tc.reason {
					want = 1
				}
				if n := fallbacks[`membus_memory_extractor_fallbacks_total{reason="`+r+`"}`]; n != want {
					t.Errorf("fallbacks{reason=%s} = %v, want %v", r, n, want)
				}
			}
			if len(got) != 2 {
				t.Fatalf("%d candidates, want 2: %+v", len(got), got)
			}
			for _, c := range got {
				if c.Extractor != tc.extractor {
					t.Errorf("candidate %q made by %q, want %q", c.Text, c.Extractor, tc.extractor)
				}
			}
			city, event := got[0], got[1]
			if city.Category != memory.Profile || city.Attribute != "lives in" || city.Value != "Boston" || city.Text != "Caroline lives in Boston." {
				t.Errorf("profile candidate %+v", city)
			}
			if event.Category != memory.Event || event.EventTime == nil || event.EventTime.Format("2006-01-02") != "2023-05-07" ||
				len(event.Sources) != 1 || event.Sources[0] != "m2" {
				t.Errorf("event candidate %+v (sources must drop ids the model made up)", event)
			}
			if tc.reason == "" && m.Snapshot(time.Now()).Counters["membus_memory_extractor_invalid_items_total"] != 1 {
				t.Error("the invalid item was not counted")
			}
		})
	}
}

func TestLLMExtractorHonoursCancellation(t *testing.T) {
	client, _ := llmStub(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := memory.NewLLM(client, nil).Extract(ctx, []memory.Message{{ID: "m1", Role: "user", Text: "I live in Boston."}})
	if err == nil {
		t.Fatal("a cancelled extraction fell back instead of failing (the commit must retry, not store heuristic output)")
	}
}
