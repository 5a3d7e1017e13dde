package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// OpenAI defaults.
const (
	DefaultOpenAIBatch   = 64
	DefaultOpenAITimeout = 30 * time.Second
	DefaultOpenAIRetries = 3
	DefaultOpenAIBackoff = 500 * time.Millisecond
	maxOpenAIBackoff     = 10 * time.Second
	maxRetryAfter        = 30 * time.Second
	maxOpenAIResponse    = 64 << 20
)

// ErrDimension: the server returned vectors of another dimension than the
// configured one or than it returned before.
var ErrDimension = errors.New("embed: embedding dimension changed")

// OpenAI calls an OpenAI-compatible POST {base}/v1/embeddings endpoint
// (OpenAI, Ollama, TEI, vLLM). It sends at most Batch texts per request,
// bounds each request by a timeout and retries 429 and 5xx answers (and
// transport errors) with exponential backoff, honouring Retry-After. The
// dimension is configured or learnt from the first response; a later
// response of another dimension is ErrDimension, never a silent mix.
type OpenAI struct {
	endpoint string
	model    string
	apiKey   string
	batch    int
	timeout  time.Duration
	retries  int
	backoff  time.Duration
	client   *http.Client
	sleep    func(ctx context.Context, d time.Duration) error

	mu  sync.Mutex
	dim int
}

// OpenAIOption configures NewOpenAI.
type OpenAIOption func(*OpenAI)

// WithOpenAIDim fixes the expected dimension instead of learning it.
func WithOpenAIDim(dim int) OpenAIOption { return func(o *OpenAI) { o.dim = dim } }

// WithOpenAIBatch sets the most texts per request (default 64).
func WithOpenAIBatch(n int) OpenAIOption { return func(o *OpenAI) { o.batch = n } }

// WithOpenAIBackoff sets the first retry delay, doubled on each retry up to 10 s
// (default 500 ms).
func WithOpenAIBackoff(d time.Duration) OpenAIOption { return func(o *OpenAI) { o.backoff = d } }

// NewOpenAI returns the embedder for model at baseURL (e.g.
// https://api.openai.com, http://localhost:11434; a trailing /v1 is
// accepted). apiKey may be empty for servers without authentication.
func NewOpenAI(baseURL, model, apiKey string, opts ...OpenAIOption) (*OpenAI, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai embedder: base url %q must be http(s)://host[:port][/path]", baseURL)
	}
	if model == "" {
		return nil, errors.New("openai embedder: model is required")
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") + "/v1/embeddings"
	u.RawQuery, u.Fragment = "", ""
	o := &OpenAI{
		endpoint: u.String(),
		model:    model,
		apiKey:   apiKey,
		batch:    DefaultOpenAIBatch,
		timeout:  DefaultOpenAITimeout,
		retries:  DefaultOpenAIRetries,
		backoff:  DefaultOpenAIBackoff,
		client:   http.DefaultClient,
		sleep:    sleepCtx,
	}
	for _, opt := range opts {
		opt(o)
	}
	if o.batch < 1 {
		o.batch = 1
	}
	if o.retries < 0 {
		o.retries = 0
	}
	if o.dim < 0 {
		return nil, fmt.Errorf("openai embedder: dimension %d", o.dim)
	}
	return o, nil
}

// Model returns "openai:" + the model name.
func (o *OpenAI) Model() string { return "openai:" + o.model }

// Provider returns "openai".
func (o *OpenAI) Provider() string { return "openai" }

// Dim returns the configured or learnt dimension, 0 before the first
// response when none was configured (see Discover).
func (o *OpenAI) Dim() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dim
}

// Discover returns the dimension, embedding one short text to learn it
// when it is not known yet.
func (o *OpenAI) Discover(ctx context.Context) (int, error) {
	if d := o.Dim(); d > 0 {
		return d, nil
	}
	if _, err := o.Embed(ctx, []string{"dimension probe"}); err != nil {
		return 0, err
	}
	return o.Dim(), nil
}

// Ping implements Pinger: one request embedding one word, without retries (the caller, an
// outage probe, retries with its own backoff). It fails on what Embed would retry: no answer,
// a timeout, 429 or 5xx. A server that answers with a refusal (a revoked key, a missing model)
// is up: that is a misconfiguration, and the commits it fails end in the DLQ, where it shows,
// instead of pausing the runner until someone notices.
func (o *OpenAI) Ping(ctx context.Context) error {
	body, err := json.Marshal(embeddingsRequest{Model: o.model, Input: []string{"ping"}})
	if err != nil {
		return err
	}
	_, err = o.post(ctx, body, 1)
	var r *retryable
	if errors.As(err, &r) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("openai embedder (%s) ping: %w", o.model, err)
	}
	return nil
}

// Embed returns one vector per text, in order, in requests of at most the
// batch size.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.batch {
		end := min(start+o.batch, len(texts))
		vecs, err := o.embedBatch(ctx, texts[start:end])
		if err != nil {
			return nil, fmt.Errorf("openai embed (%s) texts %d-%d of %d: %w", o.model, start, end-1, len(texts), err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

type embeddingsRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// retryable marks an attempt's error as worth another attempt; after is the
// server's Retry-After, 0 when absent.
type retryable struct {
	err   error
	after time.Duration
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

func (o *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(embeddingsRequest{Model: o.model, Input: texts})
	if err != nil {
		return nil, err
	}
	delay := o.backoff
	for attempt := 0; ; attempt++ {
		vecs, err := o.post(ctx, body, len(texts))
		if err == nil {
			return vecs, o.checkDim(vecs)
		}
		var r *retryable
		if !errors.As(err, &r) || attempt >= o.retries || ctx.Err() != nil {
			if attempt > 0 {
				return nil, fmt.Errorf("after %d attempts: %w", attempt+1, err)
			}
			return nil, err
		}
		wait := delay
		if r.after > 0 {
			wait = min(r.after, maxRetryAfter)
		}
		if err := o.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("waiting to retry (%w): %w", r.err, err)
		}
		delay = min(2*delay, maxOpenAIBackoff)
	}
}

// post makes one request.
func (o *OpenAI) post(ctx context.Context, body []byte, n int) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if o.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, &retryable{err: fmt.Errorf("POST %s: %w", o.endpoint, err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxOpenAIResponse))
	if err != nil {
		return nil, &retryable{err: fmt.Errorf("read response: %w", err)}
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("POST %s: %s: %s", o.endpoint, resp.Status, snippet(raw))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return nil, &retryable{err: err, after: retryAfter(resp.Header.Get("Retry-After"))}
		}
		return nil, err
	}
	var er embeddingsResponse
	if err := json.Unmarshal(raw, &er); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	if len(er.Data) != n {
		return nil, fmt.Errorf("asked for %d embeddings, got %d", n, len(er.Data))
	}
	out := make([][]float32, n)
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("response index %d out of range or repeated", d.Index)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("empty embedding at index %d", d.Index)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// checkDim learns the dimension from the first vectors and refuses any
// other dimension afterwards.
func (o *OpenAI) checkDim(vecs [][]float32) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, v := range vecs {
		if o.dim == 0 {
			o.dim = len(v)
		}
		if len(v) != o.dim {
			return fmt.Errorf("model %s returned %d dimensions, expected %d: %w", o.model, len(v), o.dim, ErrDimension)
		}
	}
	return nil
}

func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
