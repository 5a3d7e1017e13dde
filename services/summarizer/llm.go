package summarizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/membus/membus/pkg/llm"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
)

// ErrBadOutput means the model answered something that is not the expected JSON.
var ErrBadOutput = errors.New("llm summarizer: output does not match the schema")

// Fallback reasons (the reason label of summarizer_llm_fallbacks_total).
const (
	FallbackEndpoint = "endpoint" // transport error, timeout, 429/5xx after the client's retries
	FallbackGarbage  = "garbage"  // not JSON, or JSON that does not match the schema
)

// LLM summarizes with a chat model on an OpenAI-compatible endpoint (pkg/llm, JSON mode).
// When the endpoint fails or answers garbage, the fallback (Extractive) summarizes instead,
// which is logged, counted (summarizer_llm_fallbacks_total{kind,reason}) and recorded in the
// Summary (By, Fallback) — the same contract as memory.LLMExtractor.
type LLM struct {
	chat      memory.Chatter
	fallback  Summarizer
	log       *slog.Logger
	fallbacks func(kind, reason string)
}

// NewLLM returns an LLM summarizer over chat falling back to fallback (Extractive when nil);
// m may be nil (no metrics).
func NewLLM(chat memory.Chatter, fallback Summarizer, m *metrics.Metrics, log *slog.Logger) *LLM {
	if fallback == nil {
		fallback = Extractive{}
	}
	if log == nil {
		log = slog.Default()
	}
	l := &LLM{chat: chat, fallback: fallback, log: log, fallbacks: func(string, string) {}}
	if m != nil {
		fb := m.CounterVec("summarizer_llm_fallbacks_total", "LLM summaries handed to the extractive summarizer, by kind (overview, digest) and reason.", "kind", "reason")
		l.fallbacks = func(k, r string) { fb.WithLabelValues(k, r).Inc() }
	}
	return l
}

// Name implements Summarizer.
func (l *LLM) Name() string { return "llm" }

const overviewPrompt = `You maintain the cumulative overview of a conversation between a user and an assistant.
You get the previous overview (empty for the first part) and the newest messages. Update it section by section:
keep what is still true, update what changed, append what is new. Never drop earlier key facts, files or open
issues unless the new messages resolved or corrected them: a corrected fact is written in its corrected form
(and the correction noted under errors_corrections); a question or problem that was answered or resolved leaves
open_issues. Answer with one JSON object and nothing else:
{"session_title": "…", "current_state": "…", "task_goals": ["…"], "key_facts": ["…"], "files_context": ["…"],
 "errors_corrections": ["…"], "open_issues": ["…"], "abstract": "one line, at most 256 characters"}`

// llmOverview is the schema of the model's overview answer.
type llmOverview struct {
	SessionTitle      *string   `json:"session_title"`
	CurrentState      *string   `json:"current_state"`
	TaskGoals         *[]string `json:"task_goals"`
	KeyFacts          *[]string `json:"key_facts"`
	FilesContext      *[]string `json:"files_context"`
	ErrorsCorrections *[]string `json:"errors_corrections"`
	OpenIssues        *[]string `json:"open_issues"`
	Abstract          string    `json:"abstract"`
}

// UpdateOverview implements Summarizer.
func (l *LLM) UpdateOverview(ctx context.Context, prev string, msgs []memory.Message) (Summary, error) {
	var b strings.Builder
	b.WriteString("Previous overview:\n")
	b.WriteString(prev)
	b.WriteString("\n\nNewest messages:\n")
	for _, m := range msgs {
		who := m.Name
		if who == "" {
			who = m.Role
		}
		fmt.Fprintf(&b, "%s (%s) at %s: %s\n", who, m.Role, m.CreatedAt.UTC().Format(time.RFC3339), m.Text)
	}
	sum, err := l.overview(ctx, b.String())
	if err == nil {
		return sum, nil
	}
	reason, ferr := l.fail(ctx, "overview", err)
	if ferr != nil {
		return Summary{}, ferr
	}
	fb, err := l.fallback.UpdateOverview(ctx, prev, msgs)
	fb.Fallback = reason
	return fb, err
}

func (l *LLM) overview(ctx context.Context, prompt string) (Summary, error) {
	content, err := l.complete(ctx, overviewPrompt, prompt)
	if err != nil {
		return Summary{}, err
	}
	var out llmOverview
	if err := decodeStrict(content, &out); err != nil {
		return Summary{}, err
	}
	lists := []*[]string{out.TaskGoals, out.KeyFacts, out.FilesContext, out.ErrorsCorrections, out.OpenIssues}
	if out.SessionTitle == nil || strings.TrimSpace(*out.SessionTitle) == "" || out.CurrentState == nil {
		return Summary{}, fmt.Errorf("%w: session_title and current_state are required", ErrBadOutput)
	}
	o := Overview{"Session Title": {cap(clean(*out.SessionTitle))}}
	if s := clean(*out.CurrentState); s != "" {
		o["Current State"] = []string{cap(s)}
	}
	for i, list := range lists {
		if list == nil {
			return Summary{}, fmt.Errorf("%w: section %q missing", ErrBadOutput, Sections[i+2])
		}
		for _, it := range *list {
			if it = clean(strings.TrimPrefix(strings.TrimSpace(it), "- ")); it != "" {
				o.add(Sections[i+2], cap(it))
			}
		}
	}
	text := o.String()
	abstract := memory.Abstract(out.Abstract)
	if abstract == "" {
		abstract = o.Abstract()
	}
	return Summary{Text: text, Abstract: abstract, By: "llm"}, nil
}

const digestPrompt = `You write a short digest of what a user (or an agent working for them) did and learned in one period,
from the period's session abstracts and memories. Keep names, dates, decisions and open tasks; skip small talk.
Answer with one JSON object and nothing else: {"digest": "markdown, at most 3000 characters", "abstract": "one line, at most 256 characters"}`

type llmDigest struct {
	Digest   *string `json:"digest"`
	Abstract string  `json:"abstract"`
}

// Digest implements Summarizer.
func (l *LLM) Digest(ctx context.Context, in DigestInput) (Summary, error) {
	sum, err := l.digest(ctx, in)
	if err == nil {
		return sum, nil
	}
	reason, ferr := l.fail(ctx, "digest", err)
	if ferr != nil {
		return Summary{}, ferr
	}
	fb, err := l.fallback.Digest(ctx, in)
	fb.Fallback = reason
	return fb, err
}

func (l *LLM) digest(ctx context.Context, in DigestInput) (Summary, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Period: %s %s (%s to %s)\n", in.Period, in.Bucket, in.Start.Format(time.DateOnly), in.End.Add(-time.Second).Format(time.DateOnly))
	b.WriteString("Sessions:\n")
	for _, a := range in.Archives {
		b.WriteString("- " + a.Abstract + "\n")
	}
	b.WriteString("Memories:\n")
	for _, m := range in.Memories {
		fmt.Fprintf(&b, "- [%s] %s\n", m.Category, m.Text)
	}
	content, err := l.complete(ctx, digestPrompt, b.String())
	if err != nil {
		return Summary{}, err
	}
	var out llmDigest
	if err := decodeStrict(content, &out); err != nil {
		return Summary{}, err
	}
	if out.Digest == nil || strings.TrimSpace(*out.Digest) == "" {
		return Summary{}, fmt.Errorf("%w: empty digest", ErrBadOutput)
	}
	text := strings.TrimSpace(*out.Digest)
	if r := []rune(text); len(r) > maxDigest {
		text = string(r[:maxDigest-1]) + "…"
	}
	abstract := memory.Abstract(out.Abstract)
	if abstract == "" {
		abstract = memory.Abstract(text)
	}
	return Summary{Text: text, Abstract: abstract, By: "llm"}, nil
}

func (l *LLM) complete(ctx context.Context, system, user string) (string, error) {
	res, err := l.chat.Chat(ctx, llm.Request{JSON: true, Messages: []llm.Message{
		{Role: "system", Content: system}, {Role: "user", Content: user},
	}})
	if err != nil {
		return "", err
	}
	return res.Content, nil
}

// fail records a fallback and returns its reason; a cancelled ctx is returned as the error.
func (l *LLM) fail(ctx context.Context, kind string, err error) (string, error) {
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	reason := FallbackEndpoint
	if errors.Is(err, ErrBadOutput) {
		reason = FallbackGarbage
	}
	l.fallbacks(kind, reason)
	l.log.Warn("llm summary failed; falling back", "kind", kind, "fallback", l.fallback.Name(), "reason", reason, "err", err)
	return reason, nil
}

// decodeStrict decodes one JSON object (a Markdown code fence around it is tolerated).
func decodeStrict(content string, v any) error {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		return fmt.Errorf("%w: not a JSON object", ErrBadOutput)
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadOutput, err)
	}
	return nil
}

func clean(s string) string { return strings.Join(strings.Fields(s), " ") }
