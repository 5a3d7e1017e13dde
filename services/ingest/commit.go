package ingest

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
)

// commitRequestID is the deterministic id of a commit request, also its Nats-Msg-Id: a repeat
// is dropped by the outbox and by JetStream's dedup window.
func commitRequestID(account, session, kind string, upto int64) string {
	return "commit-" + bus.MsgID(account, session, kind, strconv.FormatInt(upto, 10))[:40]
}

// commitEntry is the outbox entry of a commit request.
func commitEntry(names bus.Names, req contract.CommitRequest) (store.OutboxEntry, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return store.OutboxEntry{}, err
	}
	return store.OutboxEntry{ID: req.RequestID, Subject: names.Commits(req.AccountID, req.SessionID), Payload: payload}, nil
}

// commitTrigger is the commit decision of docs/design.md §5, made inside the batch's
// transaction: when the tokens of a session's messages after commit_requested_upto reach its
// threshold (the session's own, else defaultThreshold), one automatic commit up to the newest
// seq goes to the outbox. It fires on the edge: the next crossing needs new tokens past the
// seq just requested, so replicas and redeliveries request each crossing once.
func commitTrigger(names bus.Names, defaultThreshold int, now func() time.Time) store.Trigger {
	return func(p store.Pending) (int64, []store.OutboxEntry, error) {
		threshold := defaultThreshold
		if p.Threshold != nil {
			threshold = *p.Threshold
		}
		if threshold <= 0 || p.UnrequestedTokens < int64(threshold) || p.NewestSeq <= p.CommitRequestedUpto {
			return 0, nil, nil
		}
		req := contract.CommitRequest{
			V: contract.Version, AccountID: p.AccountID, UserID: p.UserID, AgentID: p.AgentID, SessionID: p.SessionID,
			Kind: contract.CommitAuto, Upto: p.NewestSeq, KeepRecent: p.KeepRecent, CreatedAt: now().UTC(),
		}
		req.RequestID = commitRequestID(p.AccountID, p.SessionID, contract.CommitAuto, req.Upto)
		e, err := commitEntry(names, req)
		if err != nil {
			return 0, nil, err
		}
		return req.Upto, []store.OutboxEntry{e}, nil
	}
}

// idleRequest is the commit of a session idle longer than IdleCommit: the whole session
// (keep_recent 0), kind idle.
func idleRequest(names bus.Names, now func() time.Time) store.IdleRequest {
	return func(sess *store.Session, upto int64) (store.OutboxEntry, error) {
		keep := 0
		req := contract.CommitRequest{
			V: contract.Version, AccountID: sess.AccountID, UserID: sess.UserID, AgentID: sess.AgentID, SessionID: sess.SessionID,
			Kind: contract.CommitIdle, Upto: upto, KeepRecent: &keep, CreatedAt: now().UTC(),
		}
		req.RequestID = commitRequestID(sess.AccountID, sess.SessionID, contract.CommitIdle, upto)
		return commitEntry(names, req)
	}
}
