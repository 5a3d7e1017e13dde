package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/membus/membus/pkg/llm"
	"github.com/membus/membus/pkg/metrics"
)

// stub is an OpenAI-compatible endpoint whose n-th answer (1-based) is decided by reply.
type stub struct {
	calls atomic.Int32
	reply func(n int, w http.ResponseWriter, r *http.Request)
}

func (s *stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.reply(int(s.calls.Add(1)), w, r)
}

func completion(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"model":   "stub-model",
		"choices": []map[string]any{{"message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   map[string]any{"prompt_tokens": 11, "completion_tokens": 7},
	})
}

func newClient(t *testing.T, s *stub, m *metrics.Metrics) *llm.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "stub-model", APIKey: "sk-test",
		Timeout: 200 * time.Millisecond, MaxAttempts: 3, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}, m)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func counter(m *metrics.Metrics, key string) float64 {
	return m.Snapshot(time.Now()).Counters[key]
}

func TestChat(t *testing.T) {
	cases := []struct {
		name      string
		reply     func(n int, w http.ResponseWriter, r *http.Request)
		wantErr   error // nil: success
		wantCalls int32
		outcomes  map[string]float64
	}{
		{"good answer on the first try", func(n int, w http.ResponseWriter, r *http.Request) { completion(w, `{"ok":true}`) },
			nil, 1, map[string]float64{"ok": 1}},
		{"429 then success is retried", func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "0")
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			}
			completion(w, `{"ok":true}`)
		}, nil, 2, map[string]float64{"retry": 1, "ok": 1}},
		{"500s exhaust the retries", func(n int, w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		},
			llm.ErrExhausted, 3, map[string]float64{"retry": 2, "error": 1}},
		{"timeouts are retried, then exhausted", func(n int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}, llm.ErrExhausted, 3, map[string]float64{"retry": 2, "error": 1}},
		{"400 is not retried", func(n int, w http.ResponseWriter, r *http.Request) { http.Error(w, "bad model", http.StatusBadRequest) },
			&llm.StatusError{}, 1, map[string]float64{"error": 1}},
		{"an empty completion is an error", func(n int, w http.ResponseWriter, r *http.Request) { completion(w, "  ") },
			llm.ErrEmpty, 1, map[string]float64{"error": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New("test", "t")
			s := &stub{reply: tc.reply}
			res, err := newClient(t, s, m).Chat(context.Background(), llm.Request{JSON: true, Messages: []llm.Message{{Role: "user", Content: "hi"}}})
			switch want := tc.wantErr.(type) { //nolint:errorlint // the case kinds what the test expects, not err
			case nil:
				if err != nil {
					t.Fatalf("Chat: %v", err)
				}
				if res.Content != `{"ok":true}` || res.PromptTokens != 11 || res.CompletionTokens != 7 || int32(res.Attempts) != tc.wantCalls {
					t.Fatalf("response %+v", res)
				}
			case *llm.StatusError:
				var se *llm.StatusError
				if !errors.As(err, &se) || se.Code != http.StatusBadRequest {
					t.Fatalf("Chat: %v, want a 400 StatusError", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("Chat: %v, want %v", err, want)
				}
			}
			if got := s.calls.Load(); got != tc.wantCalls {
				t.Fatalf("%d calls, want %d", got, tc.wantCalls)
			}
			for outcome, n := range tc.outcomes {
				if got := counter(m, `membus_llm_requests_total{outcome="`+outcome+`"}`); got != n {
					t.Errorf("requests{outcome=%s} = %v, want %v", outcome, got, n)
				}
			}
		})
	}
}

func TestChatSendsTheOpenAIRequest(t *testing.T) {
	m := metrics.New("test", "t")
	var got struct {
		Model          string        `json:"model"`
		Messages       []llm.Message `json:"messages"`
		ResponseFormat struct {
			Type string `json:"type"`
		} `json:"response_format"`
	}
	var auth, path string
	s := &stub{reply: func(n int, w http.ResponseWriter, r *http.Request) {
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		_ = json.NewDecoder(r.Body).Decode(&got)
		completion(w, `{}`)
	}}
	c := newClient(t, s, m)
	for i := 0; i < 2; i++ {
		if _, err := c.Chat(context.Background(), llm.Request{JSON: true, Messages: []llm.Message{{Role: "user", Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if path != "/v1/chat/completions" || auth != "Bearer sk-test" || got.Model != "stub-model" || got.ResponseFormat.Type != "json_object" || len(got.Messages) != 1 {
		t.Fatalf("request path %q auth %q body %+v", path, auth, got)
	}
	if p, c := counter(m, `membus_llm_tokens_total{kind="prompt"}`), counter(m, `membus_llm_tokens_total{kind="completion"}`); p != 22 || c != 14 {
		t.Fatalf("tokens prompt %v completion %v, want 22 and 14 over two calls", p, c)
	}
}

func TestChatStopsWhenTheCallerGivesUp(t *testing.T) {
	s := &stub{reply: func(n int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}}
	c := newClient(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Chat(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Chat with a cancelled context: %v, want context.Canceled", err)
	}
	if n := s.calls.Load(); n > 1 {
		t.Fatalf("%d calls after the caller cancelled, want at most 1", n)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  llm.Config
		want string
	}{
		{"base URL required", llm.Config{Model: "m"}, "llm_base_url"},
		{"base URL must be http", llm.Config{BaseURL: "ftp://x", Model: "m"}, "llm_base_url"},
		{"model required", llm.Config{BaseURL: "http://x"}, "llm_model"},
	} {
		if _, err := llm.New(c.cfg, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}
