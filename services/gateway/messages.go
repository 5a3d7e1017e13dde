package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/nats-io/nats.go"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/gateway/request"
)

// defaultAgentID is the agent of a turn whose body names none (docs/design.md §3).
const defaultAgentID = "main"

// sourceHTTP is TurnEvent.Source of turns posted to the gateway.
const sourceHTTP = "http"

// messagesResponse answers 202.
type messagesResponse struct {
	SessionID string `json:"session_id"`
	EventID   string `json:"event_id"`
	Accepted  int    `json:"accepted"`
	Duplicate bool   `json:"duplicate"`
}

// postMessages publishes the posted messages as one TurnEvent (docs/design.md §2 "Turn in", §11). The
// answer is 202 once JetStream has stored it; ingest follows.
func (s *Service) postMessages(w http.ResponseWriter, r *http.Request, id identity) {
	ev, aerr := s.turnEvent(w, r, id)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	data, err := json.Marshal(ev)
	if err != nil {
		writeError(w, &request.Error{Status: http.StatusInternalServerError, Code: codeInternal, Message: "encode turn event"})
		return
	}
	if limit := s.deps.NC.MaxPayload(); limit > 0 && int64(len(data)) > limit {
		writeError(w, request.TooLarge(fmt.Sprintf("the turn is %d bytes encoded, over the bus limit of %d; send fewer messages per request", len(data), limit)))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RPCTimeout)
	defer cancel()
	subject := s.deps.Names.Turns(id.Account, ev.SessionID)
	ack, err := bus.Publish(ctx, s.deps.JS, subject, ev.EventID, data, nil)
	if err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			writeError(w, request.TooLarge("the turn is over the bus payload limit; send fewer messages per request"))
			return
		}
		s.log.Warn("publish turn failed", "account", id.Account, "event_id", ev.EventID, "error", err.Error())
		writeError(w, unavailable("the turn could not be stored in JetStream (stream full or JetStream unavailable); retry with the same Idempotency-Key"))
		return
	}
	writeJSON(w, http.StatusAccepted, messagesResponse{SessionID: ev.SessionID, EventID: ev.EventID,
		Accepted: len(ev.Messages), Duplicate: ack.Duplicate})
}

// turnEvent reads, checks and normalises the request into the TurnEvent to publish.
func (s *Service) turnEvent(w http.ResponseWriter, r *http.Request, id identity) (*contract.TurnEvent, *request.Error) {
	session, aerr := sessionID(r)
	if aerr != nil {
		return nil, aerr
	}
	idemKey, aerr := idempotencyKey(r)
	if aerr != nil {
		return nil, aerr
	}
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		return nil, aerr
	}
	var req request.Messages
	if aerr := request.DecodeJSON(body, &req, false); aerr != nil {
		return nil, aerr
	}
	if len(req.Messages) > s.cfg.MaxMessagesPerRequest {
		return nil, request.TooLarge(fmt.Sprintf("%d messages, over the limit of %d per request", len(req.Messages), s.cfg.MaxMessagesPerRequest))
	}
	agent := req.AgentID
	if agent == "" {
		agent = defaultAgentID
	}
	if aerr := checkAgentID(agent); aerr != nil {
		return nil, aerr
	}
	if req.KeepRecent != nil && contract.CheckKeepRecent(*req.KeepRecent) != nil {
		return nil, request.BadRequest(fmt.Sprintf("keep_recent must be 0–%d", contract.MaxKeepRecent))
	}

	// The base of derived message ids: the idempotency key, else the body's hash, so a retried
	// request yields the same ids and ingest stores each message once.
	base := "body\x1f" + sha256Hex(body)
	if idemKey != "" {
		base = "key\x1f" + idemKey
	}
	now := s.deps.Now().UTC()
	msgs := make([]contract.Message, 0, len(req.Messages))
	ids := make([]string, 0, len(req.Messages)+2)
	ids = append(ids, id.Account, session)
	for i, in := range req.Messages {
		m, aerr := request.Normalise(in, i, base, now)
		if aerr != nil {
			return nil, aerr
		}
		msgs = append(msgs, m)
		ids = append(ids, m.MessageID)
	}

	eventID := bus.MsgID(ids...)
	if idemKey != "" {
		eventID = eventIDForKey(id.Account, session, idemKey)
	}
	ev := &contract.TurnEvent{
		V:         contract.Version,
		EventID:   eventID,
		AccountID: id.Account,
		UserID:    id.User,
		AgentID:   agent,
		SessionID: session,
		Source:    sourceHTTP,
		Turn:      contract.TurnInfo{CommitTokenThreshold: clampThreshold(req.CommitTokenThreshold), KeepRecent: req.KeepRecent},
		Messages:  msgs,
		SentAt:    now,
	}
	if err := ev.Validate(); err != nil {
		return nil, request.BadRequest(err.Error())
	}
	return ev, nil
}

// eventIDForKey is the event id of a request carrying an Idempotency-Key: derived from the key
// within (account, session), so a retry gets the same id while two tenants that happen to use
// the same key never deduplicate each other's turns in the shared TURNS stream.
func eventIDForKey(account, session, key string) string {
	return "http-" + bus.MsgID("http-idempotency-key", account, session, key)
}

// clampThreshold clamps a requested commit threshold to 2000–200000 (docs/design.md §2).
func clampThreshold(v *int) *int {
	if v == nil {
		return nil
	}
	c := min(max(*v, contract.MinCommitTokenThreshold), contract.MaxCommitTokenThreshold)
	return &c
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
