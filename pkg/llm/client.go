// Package llm is a small client for OpenAI-compatible chat completion endpoints (OpenAI,
// Ollama, vLLM, LM Studio): one request shape, JSON output mode, a timeout per attempt,
// retries with exponential backoff on 429, 5xx and timeouts, and token usage counted in
// metrics.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/membus/membus/pkg/metrics"
)

// Sentinel errors.
var (
	// ErrEmpty means the endpoint answered 200 without any choice or content.
	ErrEmpty = errors.New("llm: empty completion")
	// ErrExhausted wraps the last error once every retry failed.
	ErrExhausted = errors.New("llm: retries exhausted")
)

// StatusError is a non-2xx answer of the endpoint.
type StatusError struct {
	Code int
	Body string // at most 512 bytes of the answer, for the log
}

func (e *StatusError) Error() string { return fmt.Sprintf("llm: status %d: %s", e.Code, e.Body) }

// Retryable reports whether another attempt may succeed: 429 and 5xx.
func (e *StatusError) Retryable() bool { return e.Code == http.StatusTooManyRequests || e.Code >= 500 }

// Config of a client. BaseURL is the API root that /chat/completions is appended to
// (https://api.openai.com/v1, http://127.0.0.1:11434/v1).
type Config struct {
	BaseURL string
	Model   string
	APIKey  string
	// Timeout bounds one attempt; default 60s.
	Timeout time.Duration
	// MaxAttempts is the number of tries including the first; default 4.
	MaxAttempts int
	// Backoff is the delay before the first retry, doubled (with jitter) after each; default
	// 500ms, capped by MaxBackoff (default 10s). A Retry-After header is honoured up to the cap.
	Backoff, MaxBackoff time.Duration
	// HTTPClient defaults to a client without its own timeout (Timeout applies per attempt).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Validate names the bad key.
func (c Config) Validate() error {
	switch {
	case c.BaseURL == "":
		return errors.New("llm_base_url: required")
	case !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://"):
		return fmt.Errorf("llm_base_url: %q is not an http(s) URL", c.BaseURL)
	case c.Model == "":
		return errors.New("llm_model: required")
	}
	return nil
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // system | user | assistant
	Content string `json:"content"`
}

// Request is one chat completion.
type Request struct {
	Messages    []Message
	JSON        bool // response_format json_object
	Temperature float64
	MaxTokens   int // 0: the endpoint's default
}

// Response is a completion's text and usage.
type Response struct {
	Content          string
	Model            string
	PromptTokens     int
	CompletionTokens int
	Attempts         int
}

// Client calls one endpoint and model.
type Client struct {
	cfg  Config
	http *http.Client
	log  *slog.Logger

	requests *metricsVec
	tokens   *metricsVec
	seconds  func(float64)
}

// metricsVec is a counter vector that may be absent (no metrics given).
type metricsVec struct{ add func(label string, v float64) }

func (m *metricsVec) Add(label string, v float64) {
	if m != nil && m.add != nil {
		m.add(label, v)
	}
}

// New returns a client; m may be nil (no metrics).
func New(cfg Config, m *metrics.Metrics) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 4
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Client{cfg: cfg, http: cfg.HTTPClient, log: cfg.Logger, requests: &metricsVec{}, tokens: &metricsVec{}, seconds: func(float64) {}}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if m != nil {
		req := m.CounterVec("llm_requests_total", "LLM chat attempts by outcome (ok, retry, error).", "outcome")
		tok := m.CounterVec("llm_tokens_total", "LLM tokens used, by kind (prompt, completion).", "kind")
		c.requests = &metricsVec{add: func(l string, v float64) { req.WithLabelValues(l).Add(v) }}
		c.tokens = &metricsVec{add: func(l string, v float64) { tok.WithLabelValues(l).Add(v) }}
		c.seconds = m.Histogram("llm_request_seconds", "Duration of one LLM chat attempt.").Observe
	}
	return c, nil
}

// Model is the configured model.
func (c *Client) Model() string { return c.cfg.Model }

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Temperature    float64         `json:"temperature"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type responseFormat struct {
	Type string `json:"type"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Chat sends one completion request, retrying 429, 5xx and timeouts with backoff.
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	body := chatRequest{Model: c.cfg.Model, Messages: req.Messages, Temperature: req.Temperature, MaxTokens: req.MaxTokens}
	if req.JSON {
		body.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return Response{}, fmt.Errorf("llm: encode request: %w", err)
	}
	delay := c.cfg.Backoff
	var last error
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		res, retryAfter, err := c.attempt(ctx, payload)
		if err == nil {
			c.requests.Add("ok", 1)
			res.Attempts = attempt
			return res, nil
		}
		last = err
		if !retryable(ctx, err) || attempt == c.cfg.MaxAttempts {
			c.requests.Add("error", 1)
			break
		}
		c.requests.Add("retry", 1)
		wait := delay + time.Duration(rand.Int64N(int64(delay)/4+1))
		if retryAfter > 0 {
			wait = retryAfter
		}
		wait = min(wait, c.cfg.MaxBackoff)
		c.log.Warn("llm attempt failed; retrying", "attempt", attempt, "wait", wait, "err", err)
		select {
		case <-ctx.Done():
			return Response{}, fmt.Errorf("llm: %w (last error: %w)", ctx.Err(), last)
		case <-time.After(wait):
		}
		delay = min(delay*2, c.cfg.MaxBackoff)
	}
	if retryable(ctx, last) {
		return Response{}, fmt.Errorf("%w after %d attempts: %w", ErrExhausted, c.cfg.MaxAttempts, last)
	}
	return Response{}, last
}

// attempt is one HTTP round trip under the per-attempt timeout.
func (c *Client) attempt(ctx context.Context, payload []byte) (Response, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	start := time.Now()
	defer func() { c.seconds(time.Since(start).Seconds()) }()
	hr, err := http.NewRequestWithContext(actx, http.MethodPost, strings.TrimRight(c.cfg.BaseURL, "/")+"/chat/completions", bytes.NewReader(payload))
	if err != nil {
		return Response{}, 0, fmt.Errorf("llm: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return Response{}, 0, fmt.Errorf("llm: post: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return Response{}, 0, fmt.Errorf("llm: read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return Response{}, retryAfter(resp.Header.Get("Retry-After")), &StatusError{Code: resp.StatusCode, Body: truncate(string(b), 512)}
	}
	var cr chatResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		return Response{}, 0, fmt.Errorf("llm: decode answer: %w", err)
	}
	c.tokens.Add("prompt", float64(cr.Usage.PromptTokens))
	c.tokens.Add("completion", float64(cr.Usage.CompletionTokens))
	if len(cr.Choices) == 0 || strings.TrimSpace(cr.Choices[0].Message.Content) == "" {
		return Response{}, 0, ErrEmpty
	}
	return Response{Content: cr.Choices[0].Message.Content, Model: cr.Model,
		PromptTokens: cr.Usage.PromptTokens, CompletionTokens: cr.Usage.CompletionTokens}, 0, nil
}

// retryable: 429/5xx answers and timeouts of one attempt, but never the caller's own
// cancellation or deadline.
func retryable(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Retryable()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) // connection refused / reset: the endpoint may come back
}

func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return time.Until(t)
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
