package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/membus/membus/pkg/llm"
	"github.com/membus/membus/pkg/metrics"
)

// ErrBadOutput means the model answered something that is not the memories JSON.
var ErrBadOutput = errors.New("llm extractor: output does not match the schema")

// Chatter is the part of llm.Client the LLM extractor uses.
type Chatter interface {
	Chat(ctx context.Context, req llm.Request) (llm.Response, error)
}

// LLMExtractor extracts memories with a chat model on an OpenAI-compatible endpoint. The
// answer is JSON checked against llmOutput's rules; when the endpoint fails (after the
// client's retries) or answers garbage, the batch is extracted by the fallback (heuristic)
// extractor instead, which is logged, counted (memory_extractor_fallbacks_total{reason}) and
// recorded in every candidate's Extractor field and in the Report.
type LLMExtractor struct {
	chat      Chatter
	fallback  Extractor
	log       *slog.Logger
	maxChars  int
	fallbacks func(reason string)
	dropped   func(n float64)
}

// LLMOption configures an LLMExtractor.
type LLMOption func(*LLMExtractor)

// WithLogger sets the logger.
func WithLogger(log *slog.Logger) LLMOption { return func(l *LLMExtractor) { l.log = log } }

// NewLLM returns an LLM extractor over chat; m may be nil (no metrics).
func NewLLM(chat Chatter, m *metrics.Metrics, opts ...LLMOption) *LLMExtractor {
	l := &LLMExtractor{chat: chat, fallback: NewHeuristic(), log: slog.Default(), maxChars: 24000,
		fallbacks: func(string) {}, dropped: func(float64) {}}
	for _, o := range opts {
		o(l)
	}
	if m != nil {
		fb := m.CounterVec("memory_extractor_fallbacks_total", "LLM extraction batches handed to the heuristic extractor, by reason.", "reason")
		l.fallbacks = func(r string) { fb.WithLabelValues(r).Inc() }
		l.dropped = m.Counter("memory_extractor_invalid_items_total", "LLM-proposed memories dropped by validation.").Add
	}
	return l
}

// Name implements Extractor.
func (l *LLMExtractor) Name() string { return "llm" }

// Fallback reasons (metric label values).
const (
	FallbackEndpoint = "endpoint" // transport error, timeout, 429/5xx after the retries, other status
	FallbackGarbage  = "garbage"  // not JSON, or JSON that does not match the schema
)

// Report says how an extraction ran.
type Report struct {
	Extractor string // "llm", "heuristic", or "llm+heuristic" when some batches fell back
	Batches   int
	Fallbacks int
	Reasons   []string
}

// Extract implements Extractor.
func (l *LLMExtractor) Extract(ctx context.Context, msgs []Message) ([]Candidate, error) {
	out, _, err := l.ExtractReport(ctx, msgs)
	return out, err
}

// ExtractReport extracts and reports which extractor ran for each batch.
func (l *LLMExtractor) ExtractReport(ctx context.Context, msgs []Message) ([]Candidate, Report, error) {
	var out []Candidate
	rep := Report{}
	for _, batch := range l.batches(msgs) {
		rep.Batches++
		cands, err := l.extractBatch(ctx, batch)
		if err == nil {
			out = append(out, cands...)
			continue
		}
		if ctx.Err() != nil {
			return nil, rep, ctx.Err()
		}
		reason := FallbackEndpoint
		if errors.Is(err, ErrBadOutput) {
			reason = FallbackGarbage
		}
		rep.Fallbacks++
		rep.Reasons = append(rep.Reasons, reason)
		l.fallbacks(reason)
		l.log.Warn("llm extraction failed; falling back", "fallback", l.fallback.Name(), "reason", reason, "messages", len(batch), "err", err)
		fb, ferr := l.fallback.Extract(ctx, batch)
		if ferr != nil {
			return nil, rep, fmt.Errorf("fallback %s after %w: %w", l.fallback.Name(), err, ferr)
		}
		for i := range fb {
			if fb[i].Extractor == "" {
				fb[i].Extractor = l.fallback.Name()
			}
		}
		out = append(out, fb...)
	}
	switch rep.Fallbacks {
	case 0:
		rep.Extractor = l.Name()
	case rep.Batches:
		rep.Extractor = l.fallback.Name()
	default:
		rep.Extractor = l.Name() + "+" + l.fallback.Name()
	}
	return out, rep, nil
}

// batches splits the user and assistant messages into requests of at most maxChars.
func (l *LLMExtractor) batches(msgs []Message) [][]Message {
	var out [][]Message
	var cur []Message
	size := 0
	for _, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			continue
		}
		if len(cur) > 0 && size+len(m.Text) > l.maxChars {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, m)
		size += len(m.Text)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

const llmSystemPrompt = `You extract long-term memories from a conversation between a user and an assistant.
Answer with one JSON object and nothing else: {"memories": [ ... ]}. Each memory is an object:
  "category": one of profile, preference, entity, event, fact, decision, task (from user messages) or case, pattern (from assistant messages: a case is a problem and what solved it; a pattern is a recurring procedure),
  "scope": "user" for what the user said, "agent" for what the assistant said,
  "subject": who or what the memory is about (the speaker's name for first-person statements),
  "attribute": the slot the value fills, e.g. "lives in", "works at", "job", "name", "dog", "sister anna", "likes coffee", "favorite movie", "habit go to the gym" (empty for events, decisions, tasks, facts, cases, patterns),
  "polarity": 1, or -1 for negations ("doesn't like coffee anymore", "no longer lives in Boston"),
  "value": the value of the slot (a name, place, object), or the statement itself,
  "text": one self-contained sentence in the third person, with "I"/"my" replaced by the speaker's name,
  "abstract": at most 256 characters,
  "importance": 0 to 1,
  "event_time": "YYYY-MM-DD" for events and dated tasks, resolved against the message time ("yesterday" said on 2023-05-08 is 2023-05-07), else omitted,
  "sources": the ids of the messages that state the memory.
Apply corrections ("actually, it's Rex, not Max" gives only Rex). Skip small talk, questions and requests. Answer {"memories": []} when there is nothing worth remembering.`

// llmOutput is the schema of the model's answer.
type llmOutput struct {
	Memories []llmMemory `json:"memories"`
}

type llmMemory struct {
	Category   string   `json:"category"`
	Scope      string   `json:"scope"`
	Subject    string   `json:"subject"`
	Attribute  string   `json:"attribute"`
	Polarity   *int     `json:"polarity"`
	Value      string   `json:"value"`
	Text       string   `json:"text"`
	Abstract   string   `json:"abstract"`
	Importance *float64 `json:"importance"`
	EventTime  string   `json:"event_time"`
	Sources    []string `json:"sources"`
}

func (l *LLMExtractor) extractBatch(ctx context.Context, msgs []Message) ([]Candidate, error) {
	var b strings.Builder
	speakers := map[string]Message{}
	for _, m := range msgs {
		who := m.Name
		if who == "" {
			who = "User"
			if m.Role == "assistant" {
				who = "Assistant"
			}
		}
		m.Name = who
		speakers[m.ID] = m
		fmt.Fprintf(&b, "[id=%s] %s (%s) at %s: %s\n", m.ID, m.Role, who, m.CreatedAt.UTC().Format(time.RFC3339), m.Text)
	}
	res, err := l.chat.Chat(ctx, llm.Request{JSON: true, Messages: []llm.Message{
		{Role: "system", Content: llmSystemPrompt},
		{Role: "user", Content: "Conversation:\n" + b.String()},
	}})
	if err != nil {
		return nil, err
	}
	var outp llmOutput
	dec := json.NewDecoder(strings.NewReader(stripFence(res.Content)))
	if err := dec.Decode(&outp); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOutput, err)
	}
	if outp.Memories == nil && !strings.Contains(res.Content, `"memories"`) {
		return nil, fmt.Errorf("%w: no \"memories\" array", ErrBadOutput)
	}
	var out []Candidate
	dropped := 0
	for i, lm := range outp.Memories {
		c, err := lm.candidate(speakers)
		if err != nil {
			dropped++
			l.log.Debug("llm memory dropped", "index", i, "err", err)
			continue
		}
		out = append(out, c)
	}
	if dropped > 0 {
		l.dropped(float64(dropped))
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: all %d memories invalid", ErrBadOutput, dropped)
		}
	}
	return out, nil
}

// stripFence removes a Markdown code fence some models wrap JSON in.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	return s
}

var llmCategories = map[string]bool{Profile: true, Preference: true, Entity: true, Event: true, Fact: true,
	Decision: true, Task: true, Case: true, Pattern: true}

// candidate validates one proposed memory and turns it into a Candidate.
func (lm llmMemory) candidate(speakers map[string]Message) (Candidate, error) {
	cat := strings.ToLower(strings.TrimSpace(lm.Category))
	if !llmCategories[cat] {
		return Candidate{}, fmt.Errorf("category %q", lm.Category)
	}
	text := strings.TrimSpace(lm.Text)
	if text == "" {
		return Candidate{}, errors.New("empty text")
	}
	var srcs []string
	var first Message
	for _, id := range lm.Sources {
		m, ok := speakers[id]
		if !ok {
			continue // an id the model made up
		}
		if len(srcs) == 0 {
			first = m
		}
		if !containsString(srcs, id) {
			srcs = append(srcs, id)
		}
	}
	if len(srcs) == 0 {
		return Candidate{}, errors.New("no known source message")
	}
	scope := strings.ToLower(lm.Scope)
	if scope != ScopeUser && scope != ScopeAgent {
		scope = ScopeUser
		if first.Role == "assistant" {
			scope = ScopeAgent
		}
	}
	pol := 1
	if lm.Polarity != nil {
		switch *lm.Polarity {
		case 1:
		case -1:
			pol = -1
		default:
			return Candidate{}, fmt.Errorf("polarity %d", *lm.Polarity)
		}
	}
	imp := importance[cat]
	if lm.Importance != nil {
		if *lm.Importance < 0 || *lm.Importance > 1 {
			return Candidate{}, fmt.Errorf("importance %v", *lm.Importance)
		}
		imp = *lm.Importance
	}
	subject := strings.TrimSpace(lm.Subject)
	if subject == "" {
		subject = first.Name
	}
	text = ResolveSpeaker(text, first.Name)
	abstract := strings.TrimSpace(lm.Abstract)
	if abstract == "" {
		abstract = text
	}
	value := strings.TrimSpace(lm.Value)
	if value == "" {
		value = text
	}
	c := Candidate{Scope: scope, Category: cat, Subject: subject, Attribute: strings.ToLower(strings.TrimSpace(lm.Attribute)),
		Polarity: pol, Value: value, Abstract: Abstract(abstract), Text: text, Importance: imp, Sources: srcs, Extractor: "llm"}
	if lm.EventTime != "" {
		t, err := parseDay(lm.EventTime, first.CreatedAt.Location())
		if err != nil {
			return Candidate{}, fmt.Errorf("event_time %q: %w", lm.EventTime, err)
		}
		c.EventTime = &t
	}
	return c, nil
}

func parseDay(s string, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	if t, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, err
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc), nil
}
