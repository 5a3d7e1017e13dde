package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

type acceptedBody struct {
	SessionID string `json:"session_id"`
	EventID   string `json:"event_id"`
	Accepted  int    `json:"accepted"`
	Duplicate bool   `json:"duplicate"`
}

func decodeAccepted(t *testing.T, body []byte) acceptedBody {
	t.Helper()
	var a acceptedBody
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("202 body %q: %v", body, err)
	}
	return a
}

// turnsStored counts the messages of the TURNS stream.
func (e *env) turnsStored() uint64 {
	e.t.Helper()
	st, err := e.js.Stream(context.Background(), e.names.Stream(bus.StreamTurns))
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return info.State.Msgs
}

// lastTurn returns the last message stored on subject.
func (e *env) lastTurn(subject string) (*jetstream.RawStreamMsg, contract.TurnEvent) {
	e.t.Helper()
	st, err := e.js.Stream(context.Background(), e.names.Stream(bus.StreamTurns))
	if err != nil {
		e.t.Fatal(err)
	}
	msg, err := st.GetLastMsgForSubject(context.Background(), subject)
	if err != nil {
		e.t.Fatalf("no turn on %s: %v", subject, err)
	}
	var ev contract.TurnEvent
	if err := json.Unmarshal(msg.Data, &ev); err != nil {
		e.t.Fatal(err)
	}
	return msg, ev
}

func TestPostMessagesPublishesANormalisedTurn(t *testing.T) {
	e := newEnv(t)
	given := time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	body := map[string]any{
		"agent_id": "coder",
		"messages": []map[string]any{
			{"role": "user", "content": "hello there", "name": "Ann"},
			{"role": "assistant", "content": []map[string]any{{"type": "text", "text": "hi"}, {"type": "tool_call", "id": "c1", "name": "search", "arguments": "{}"}}, "external_id": "ext-7", "created_at": given},
		},
		"commit_token_threshold": 10,
		"keep_recent":            3,
	}
	hdr := bearer(e.userKey)
	hdr["X-Membus-Account"] = "globex" // ignored: the key's account rules
	rec := e.do("POST", "/v1/sessions/sess:1/messages", body, hdr)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	a := decodeAccepted(t, rec.Body.Bytes())
	if a.SessionID != "sess:1" || a.Accepted != 2 || a.Duplicate || a.EventID == "" {
		t.Fatalf("answer %+v", a)
	}

	subject := e.names.Turns("acme", "sess:1")
	msg, ev := e.lastTurn(subject)
	if got := msg.Header.Get("Nats-Msg-Id"); got != a.EventID {
		t.Fatalf("Nats-Msg-Id %q, want the event id %q", got, a.EventID)
	}
	if ev.V != 1 || ev.EventID != a.EventID || ev.AccountID != "acme" || ev.UserID != "alice" ||
		ev.AgentID != "coder" || ev.SessionID != "sess:1" || ev.Source != "http" || !ev.SentAt.Equal(fixedNow) {
		t.Fatalf("event header fields: %+v", ev)
	}
	if ev.Turn.CommitTokenThreshold == nil || *ev.Turn.CommitTokenThreshold != contract.MinCommitTokenThreshold {
		t.Errorf("commit_token_threshold %v, want clamped to %d", ev.Turn.CommitTokenThreshold, contract.MinCommitTokenThreshold)
	}
	if ev.Turn.KeepRecent == nil || *ev.Turn.KeepRecent != 3 {
		t.Errorf("keep_recent %v", ev.Turn.KeepRecent)
	}
	if len(ev.Messages) != 2 {
		t.Fatalf("%d messages", len(ev.Messages))
	}
	m0, m1 := ev.Messages[0], ev.Messages[1]
	if m0.Position != 0 || m0.Role != "user" || m0.Name != "Ann" || len(m0.Parts) != 1 ||
		m0.Parts[0] != (contract.Part{Type: "text", Text: "hello there"}) {
		t.Errorf("string content not normalised to one text part: %+v", m0)
	}
	if !m0.CreatedAt.Equal(fixedNow) || m0.CreatedAt.Location() != time.UTC {
		t.Errorf("created_at %v, want now in UTC", m0.CreatedAt)
	}
	if m0.MessageID == "" || m0.MessageID == m1.MessageID {
		t.Errorf("derived message id %q", m0.MessageID)
	}
	if m1.Position != 1 || m1.MessageID != "ext-7" || len(m1.Parts) != 2 || m1.Parts[1].Type != "tool_call" {
		t.Errorf("parts message: %+v", m1)
	}
	if !m1.CreatedAt.Equal(given) || m1.CreatedAt.Location() != time.UTC {
		t.Errorf("given created_at %v, want %v in UTC", m1.CreatedAt, given)
	}
	if want := bus.MsgID("acme", "sess:1", m0.MessageID, "ext-7"); a.EventID != want {
		t.Errorf("event id %q, want the hash of account, session and message ids %q", a.EventID, want)
	}
	if ev.Validate() != nil {
		t.Errorf("published event does not validate: %v", ev.Validate())
	}
}

func TestPostMessagesRetriesAreDeduplicated(t *testing.T) {
	tests := []struct {
		name string
		hdr  func(e *env) map[string]string
	}{
		{"same Idempotency-Key", func(e *env) map[string]string {
			h := bearer(e.userKey)
			h["Idempotency-Key"] = "turn-42"
			return h
		}},
		{"same body without a key", func(e *env) map[string]string { return bearer(e.userKey) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			body := `{"messages":[{"role":"user","content":"remember I like tea"}]}`
			first := e.do("POST", "/v1/sessions/s1/messages", body, tc.hdr(e))
			second := e.do("POST", "/v1/sessions/s1/messages", body, tc.hdr(e))
			if first.Code != 202 || second.Code != 202 {
				t.Fatalf("status %d, %d: %s %s", first.Code, second.Code, first.Body, second.Body)
			}
			a1 := decodeAccepted(t, first.Body.Bytes())
			a2 := decodeAccepted(t, second.Body.Bytes())
			if a1.Duplicate || !a2.Duplicate || a1.EventID != a2.EventID {
				t.Fatalf("first %+v, retry %+v: want the same event id and duplicate true on the retry", a1, a2)
			}
			if n := e.turnsStored(); n != 1 {
				t.Fatalf("%d turns stored, want 1", n)
			}
		})
	}
}

func TestIdempotencyKeyIsScopedToTheTenant(t *testing.T) {
	e := newEnv(t)
	body := `{"messages":[{"role":"user","content":"hi"}]}`
	h1 := bearer(e.userKey)
	h1["Idempotency-Key"] = "k1"
	h2 := bearer(e.otherAccountKey)
	h2["Idempotency-Key"] = "k1"
	r1 := e.do("POST", "/v1/sessions/s1/messages", body, h1)
	r2 := e.do("POST", "/v1/sessions/s1/messages", body, h2)
	a1 := decodeAccepted(t, r1.Body.Bytes())
	a2 := decodeAccepted(t, r2.Body.Bytes())
	if a2.Duplicate || a1.EventID == a2.EventID {
		t.Fatalf("another account's turn with the same key was deduplicated: %+v %+v", a1, a2)
	}
	if n := e.turnsStored(); n != 2 {
		t.Fatalf("%d turns stored, want 2", n)
	}
}

func TestPostMessagesRejections(t *testing.T) {
	big := strings.Repeat("x", contract.MaxMessageBytes+1)
	many := make([]map[string]any, 101)
	for i := range many {
		many[i] = map[string]any{"role": "user", "content": "m"}
	}
	tests := []struct {
		name       string
		body       any
		wantStatus int
		wantInMsg  string
	}{
		{"more messages than allowed is 413", map[string]any{"messages": many}, 413, "101 messages"},
		{"body over the limit is 413", `{"messages":[{"role":"user","content":"` + strings.Repeat("y", 1<<20) + `"}]}`, 413, "limit"},
		{"one message over 256 KiB is 413", map[string]any{"messages": []map[string]any{{"role": "user", "content": big}}}, 413, "messages[0]"},
		{"system role is 400 with the reason", map[string]any{"messages": []map[string]any{{"role": "system", "content": "x"}}}, 400, `role must be user, assistant or tool, got "system"`},
		{"unknown role is 400 with the reason", map[string]any{"messages": []map[string]any{{"role": "robot", "content": "x"}}}, 400, `"robot"`},
		{"no messages is 400", map[string]any{"messages": []any{}}, 400, "messages must not be empty"},
		{"empty body is 400", "", 400, "body is required"},
		{"invalid JSON is 400", `{"messages": [`, 400, "invalid JSON"},
		{"numeric content is 400", `{"messages":[{"role":"user","content":5}]}`, 400, "string or an array"},
		{"missing content is 400", `{"messages":[{"role":"user"}]}`, 400, "content is required"},
		{"empty content is 400", `{"messages":[{"role":"user","content":""}]}`, 400, "must not be empty"},
		{"unknown part type is 400", `{"messages":[{"role":"user","content":[{"type":"video"}]}]}`, 400, `unknown type "video"`},
		{"bad agent id is 400", `{"agent_id":"a b","messages":[{"role":"user","content":"x"}]}`, 400, "agent_id"},
		{"keep_recent out of range is 400", `{"keep_recent":500,"messages":[{"role":"user","content":"x"}]}`, 400, "keep_recent"},
	}
	e := newEnv(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("POST", "/v1/sessions/s1/messages", tc.body, bearer(e.userKey))
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body.String())
			}
			_, msg := errorBody(t, rec)
			if !strings.Contains(msg, tc.wantInMsg) {
				t.Fatalf("message %q does not say %q", msg, tc.wantInMsg)
			}
		})
	}
	if n := e.turnsStored(); n != 0 {
		t.Fatalf("%d turns stored from rejected requests", n)
	}
}

func TestPostMessagesWithoutStreamIs503(t *testing.T) {
	e := newEnv(t, func(s *setup) { s.noStreams = true; s.cfg.RPCTimeout = 2 * time.Second })
	rec := e.do("POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"user","content":"x"}]}`, bearer(e.userKey))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", rec.Code, rec.Body.String())
	}
	if code, msg := errorBody(t, rec); code != "unavailable" || !strings.Contains(msg, "JetStream") {
		t.Fatalf("error %s: %s", code, msg)
	}
}

func TestPostMessagesToAFullStreamIs503(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	st, err := e.js.Stream(ctx, e.names.Stream(bus.StreamTurns))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	cfg.MaxMsgs = 1
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if rec := e.do("POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"user","content":"one"}]}`, bearer(e.userKey)); rec.Code != 202 {
		t.Fatalf("first: %d %s", rec.Code, rec.Body.String())
	}
	rec := e.do("POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"user","content":"two"}]}`, bearer(e.userKey))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("full stream: status %d, want 503: %s", rec.Code, rec.Body.String())
	}
}
