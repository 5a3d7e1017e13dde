package embed

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeEmbeddings is an OpenAI-compatible /v1/embeddings server. reply
// decides each answer by request number (0-based); a nil reply embeds.
type fakeEmbeddings struct {
	t     *testing.T
	dim   func(call int) int
	reply func(w http.ResponseWriter, call int) bool

	mu       sync.Mutex
	calls    int
	batches  [][]string
	auth     []string
	paths    []string
	sleeps   []time.Duration
	reversed bool
}

func (f *fakeEmbeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	call := f.calls
	f.calls++
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	if f.reply != nil && f.reply(w, call) {
		return
	}
	var req embeddingsRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "nomic-embed-text" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.batches = append(f.batches, req.Input)
	f.mu.Unlock()
	dim := 4
	if f.dim != nil {
		dim = f.dim(call)
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []item
	for i, text := range req.Input {
		v := make([]float32, dim)
		v[0] = float32(len(text)) // recognisable per text
		data = append(data, item{Index: i, Embedding: v})
	}
	if f.reversed {
		for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
			data[i], data[j] = data[j], data[i]
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
}

func newOpenAI(t *testing.T, f *fakeEmbeddings, opts ...OpenAIOption) *OpenAI {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	o, err := NewOpenAI(srv.URL+"/v1/", "nomic-embed-text", "sk-test", append([]OpenAIOption{WithOpenAIBackoff(time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	o.sleep = func(ctx context.Context, d time.Duration) error {
		f.mu.Lock()
		f.sleeps = append(f.sleeps, d)
		f.mu.Unlock()
		return ctx.Err()
	}
	return o
}

func TestOpenAIEmbedsInBatches(t *testing.T) {
	f := &fakeEmbeddings{t: t, reversed: true}
	o := newOpenAI(t, f, WithOpenAIBatch(2))
	if o.Dim() != 0 {
		t.Fatalf("dim before the first call = %d, want 0 (unknown)", o.Dim())
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vecs, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		if int(v[0]) != len(texts[i]) {
			t.Fatalf("vector %d belongs to another text: %v", i, v)
		}
	}
	if len(f.batches) != 3 || len(f.batches[0]) != 2 || len(f.batches[2]) != 1 {
		t.Fatalf("batches %v, want 2+2+1", f.batches)
	}
	if o.Dim() != 4 || o.Model() != "openai:nomic-embed-text" || o.Provider() != "openai" {
		t.Fatalf("dim %d model %s provider %s", o.Dim(), o.Model(), o.Provider())
	}
	if f.auth[0] != "Bearer sk-test" || f.paths[0] != "POST /v1/embeddings" {
		t.Fatalf("request: %q %q", f.auth[0], f.paths[0])
	}
}

func TestOpenAIRetries(t *testing.T) {
	tests := []struct {
		name      string
		reply     func(w http.ResponseWriter, call int) bool
		wantErr   string
		wantCalls int
		wantSleep []time.Duration
	}{
		{"429 then ok: retried after Retry-After", func(w http.ResponseWriter, call int) bool {
			if call == 0 {
				w.Header().Set("Retry-After", "2")
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return true
			}
			return false
		}, "", 2, []time.Duration{2 * time.Second}},
		{"500s: retried with doubling backoff, then an error", func(w http.ResponseWriter, call int) bool {
			http.Error(w, "boom", http.StatusInternalServerError)
			return true
		}, "500 Internal Server Error", 4, []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}},
		{"503 then ok", func(w http.ResponseWriter, call int) bool {
			if call == 0 {
				http.Error(w, "starting", http.StatusServiceUnavailable)
				return true
			}
			return false
		}, "", 2, []time.Duration{time.Millisecond}},
		{"400 is not retried", func(w http.ResponseWriter, call int) bool {
			http.Error(w, `{"error":"bad model"}`, http.StatusBadRequest)
			return true
		}, "bad model", 1, nil},
		{"fewer embeddings than inputs is an error", func(w http.ResponseWriter, call int) bool {
			_, _ = w.Write([]byte(`{"data":[{"index":0,"embedding":[1,2]}]}`))
			return true
		}, "asked for 2 embeddings, got 1", 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEmbeddings{t: t, reply: tc.reply}
			o := newOpenAI(t, f)
			_, err := o.Embed(context.Background(), []string{"x", "y"})
			if tc.wantErr == "" && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
			if f.calls != tc.wantCalls {
				t.Fatalf("%d requests, want %d", f.calls, tc.wantCalls)
			}
			if len(f.sleeps) != len(tc.wantSleep) {
				t.Fatalf("slept %v, want %v", f.sleeps, tc.wantSleep)
			}
			for i := range f.sleeps {
				if f.sleeps[i] != tc.wantSleep[i] {
					t.Fatalf("slept %v, want %v", f.sleeps, tc.wantSleep)
				}
			}
		})
	}
}

func TestOpenAIDimension(t *testing.T) {
	t.Run("a different dimension between calls is an error", func(t *testing.T) {
		f := &fakeEmbeddings{t: t, dim: func(call int) int { return 4 + call }}
		o := newOpenAI(t, f)
		if _, err := o.Embed(context.Background(), []string{"a"}); err != nil {
			t.Fatal(err)
		}
		_, err := o.Embed(context.Background(), []string{"b"})
		if !errors.Is(err, ErrDimension) {
			t.Fatalf("err = %v, want ErrDimension", err)
		}
		if o.Dim() != 4 {
			t.Fatalf("dim changed to %d", o.Dim())
		}
	})
	t.Run("a configured dimension is enforced from the first call", func(t *testing.T) {
		o := newOpenAI(t, &fakeEmbeddings{t: t}, WithOpenAIDim(384))
		if o.Dim() != 384 {
			t.Fatalf("dim %d", o.Dim())
		}
		if _, err := o.Embed(context.Background(), []string{"a"}); !errors.Is(err, ErrDimension) {
			t.Fatalf("err = %v, want ErrDimension", err)
		}
	})
	t.Run("discover probes once", func(t *testing.T) {
		f := &fakeEmbeddings{t: t}
		o := newOpenAI(t, f)
		for range 2 {
			if d, err := o.Discover(context.Background()); err != nil || d != 4 {
				t.Fatalf("discover = %d, %v", d, err)
			}
		}
		if f.calls != 1 {
			t.Fatalf("%d requests, want 1", f.calls)
		}
	})
}

func TestOpenAICanceledWhileWaiting(t *testing.T) {
	f := &fakeEmbeddings{t: t, reply: func(w http.ResponseWriter, call int) bool {
		http.Error(w, "busy", http.StatusTooManyRequests)
		return true
	}}
	o := newOpenAI(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	o.sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	_, err := o.Embed(ctx, []string{"a"})
	if !errors.Is(err, context.Canceled) || f.calls != 1 {
		t.Fatalf("err = %v after %d calls", err, f.calls)
	}
}

// TestOpenAIPing: the outage probe passes while the server embeds, and while it answers a
// refusal (a misconfiguration, not an outage: its commits go to the DLQ), and fails at once,
// without retrying, when it answers 5xx; through the embedding cache too (PingerOf).
func TestOpenAIPing(t *testing.T) {
	var status atomic.Int32 // 0: embed
	f := &fakeEmbeddings{t: t, reply: func(w http.ResponseWriter, _ int) bool {
		if s := int(status.Load()); s != 0 {
			http.Error(w, http.StatusText(s), s)
			return true
		}
		return false
	}}
	o := newOpenAI(t, f)
	p, ok := PingerOf(NewCached(o, 10))
	if !ok {
		t.Fatal("PingerOf(the cached OpenAI embedder) found no Pinger")
	}
	ctx := context.Background()
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("ping of a server that embeds: %v", err)
	}
	status.Store(http.StatusUnauthorized)
	if err := p.Ping(ctx); err != nil {
		t.Errorf("ping of a server refusing the key: %v, want it up (a misconfiguration is no outage)", err)
	}
	status.Store(http.StatusServiceUnavailable)
	if err := p.Ping(ctx); err == nil {
		t.Fatal("ping of a server answering 503 passed")
	}
	f.mu.Lock()
	calls, sleeps := f.calls, len(f.sleeps)
	f.mu.Unlock()
	if calls != 3 || sleeps != 0 {
		t.Errorf("%d calls and %d retry waits for three pings, want 3 and none", calls, sleeps)
	}
	if _, ok := PingerOf(NewCached(NewHash(), 10)); ok {
		t.Error("PingerOf(hash) found a Pinger: a model in the process cannot be down")
	}
}

func TestNewOpenAIValidates(t *testing.T) {
	tests := []struct{ name, base, model, wantURL string }{
		{"no scheme", "localhost:11434", "m", ""},
		{"no model", "http://localhost:11434", "", ""},
		{"base without /v1", "http://localhost:11434", "m", "http://localhost:11434/v1/embeddings"},
		{"base with /v1", "https://api.openai.com/v1", "m", "https://api.openai.com/v1/embeddings"},
		{"base with a path prefix", "http://gw/tei/", "m", "http://gw/tei/v1/embeddings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := NewOpenAI(tc.base, tc.model, "")
			if tc.wantURL == "" {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil || o.endpoint != tc.wantURL {
				t.Fatalf("endpoint %v, %v; want %s", o, err, tc.wantURL)
			}
		})
	}
}
