package summarizer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/membus/membus/pkg/llm"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
)

// llmStub is an OpenAI-compatible endpoint answering with answer(n) (n is 1-based).
func llmStub(t *testing.T, answer func(n int, w http.ResponseWriter)) (*llm.Client, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ResponseFormat *struct {
				Type string `json:"type"`
			} `json:"response_format"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if r.URL.Path != "/chat/completions" || req.ResponseFormat == nil || req.ResponseFormat.Type != "json_object" {
			t.Errorf("request %s without JSON mode", r.URL.Path)
		}
		answer(int(calls.Add(1)), w)
	}))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "stub", Timeout: time.Second, MaxAttempts: 2,
		Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, &calls
}

func reply(w http.ResponseWriter, content string) {
	_ = json.NewEncoder(w).Encode(map[string]any{
		"choices": []map[string]any{{"message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5},
	})
}

const goodOverview = `{"session_title": "Billing migration to Postgres", "current_state": "Import batched",
 "task_goals": ["Migrate billing to Postgres"], "key_facts": ["Database port is 6432 (corrected from 5432)"],
 "files_context": ["deploy/billing.yaml"], "errors_corrections": ["Port corrected to 6432"], "open_issues": [],
 "abstract": "Billing migration to Postgres; port 6432."}`

func TestLLMSummarizer(t *testing.T) {
	msgs := []memory.Message{{ID: "m1", Role: "user", Text: "I want to migrate the billing service to Postgres.", CreatedAt: time.Unix(0, 0)}}
	cases := []struct {
		name     string
		answer   func(n int, w http.ResponseWriter)
		by       string
		fallback string
		contains string
	}{
		{"valid JSON is the overview", func(_ int, w http.ResponseWriter) { reply(w, goodOverview) }, "llm", "", "Database port is 6432"},
		{"fenced JSON is accepted", func(_ int, w http.ResponseWriter) { reply(w, "```json\n"+goodOverview+"\n```") }, "llm", "", "## Session Title\nBilling migration"},
		{"prose is garbage: extractive fallback", func(_ int, w http.ResponseWriter) { reply(w, "Sure! Here is your summary: the user migrates billing.") }, "extractive", FallbackGarbage, "migrate the billing service"},
		{"JSON without the sections is garbage", func(_ int, w http.ResponseWriter) { reply(w, `{"summary": "billing"}`) }, "extractive", FallbackGarbage, "migrate the billing service"},
		{"a list instead of an object is garbage", func(_ int, w http.ResponseWriter) { reply(w, `["billing"]`) }, "extractive", FallbackGarbage, "migrate the billing service"},
		{"5xx after the retries: endpoint fallback", func(_ int, w http.ResponseWriter) { http.Error(w, "overloaded", http.StatusServiceUnavailable) }, "extractive", FallbackEndpoint, "migrate the billing service"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client, calls := llmStub(t, tc.answer)
			m := metrics.New("summarizer", "test")
			l := NewLLM(client, Extractive{}, m, nil)
			got, err := l.UpdateOverview(context.Background(), "", msgs)
			if err != nil {
				t.Fatal(err)
			}
			if got.By != tc.by || got.Fallback != tc.fallback {
				t.Errorf("by %q fallback %q, want %q %q", got.By, got.Fallback, tc.by, tc.fallback)
			}
			if !strings.Contains(got.Text, tc.contains) || len(got.Text) > 4000 || len([]rune(got.Abstract)) > 256 || got.Abstract == "" {
				t.Errorf("overview lacks %q or breaks a cap:\n%s\nabstract %q", tc.contains, got.Text, got.Abstract)
			}
			if calls.Load() == 0 {
				t.Error("the endpoint was never called")
			}
			fb := testutil.ToFloat64(m.CounterVec("summarizer_llm_fallbacks_total", "", "kind", "reason").WithLabelValues("overview", tc.fallback))
			if tc.fallback != "" && fb != 1 {
				t.Errorf("fallback counted %v times, want 1", fb)
			}
		})
	}
}

func TestLLMDigestFallsBackOnGarbage(t *testing.T) {
	in := DigestInput{Owner: store.DigestOwner{AccountID: acct, UserID: "alice"}, Period: PeriodDay, Bucket: "2026-11-30",
		Start: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Memories: []store.Memory{{Category: memory.Decision, Text: "Alice decided to move billing to Postgres."}}}
	good, _ := llmStub(t, func(_ int, w http.ResponseWriter) {
		reply(w, `{"digest": "Alice moved billing to Postgres.", "abstract": "Billing to Postgres"}`)
	})
	sum, err := NewLLM(good, nil, nil, nil).Digest(context.Background(), in)
	if err != nil || sum.By != "llm" || sum.Text != "Alice moved billing to Postgres." {
		t.Fatalf("good digest: %+v %v", sum, err)
	}
	bad, _ := llmStub(t, func(_ int, w http.ResponseWriter) { reply(w, `{"digest": ""}`) })
	sum, err = NewLLM(bad, nil, nil, nil).Digest(context.Background(), in)
	if err != nil || sum.By != "extractive" || sum.Fallback != FallbackGarbage || !strings.Contains(sum.Text, "move billing to Postgres") {
		t.Fatalf("empty digest did not fall back: %+v %v", sum, err)
	}
}
