package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// HeaderDLQMsgID keeps the original Nats-Msg-Id of a dead letter (the letter itself is stored
// under its own id), so a replay can derive a fresh one.
const HeaderDLQMsgID = "Membus-Dlq-Msg-Id"

// HeaderDLQTruncated is set when the payload was too large to keep whole in the DLQ.
const HeaderDLQTruncated = "Membus-Dlq-Truncated"

// StreamOutbox is the stream name used in the DLQ for outbox rows that could not be published.
const StreamOutbox = "outbox"

// maxReasonLen bounds the reason header.
const maxReasonLen = 1024

// ErrDLQNotFound is returned by GetDLQ and ReplayDLQ for a sequence that holds no dead letter.
var ErrDLQNotFound = errors.New("dead letter not found")

// DeadLetter is one message of the DLQ stream: its DLQ sequence and subject plus the
// envelope `membus dlq show` prints.
type DeadLetter struct {
	Seq     uint64
	Subject string
	contract.DLQEnvelope
}

// PublishDeadLetter publishes m's original data to n.DLQ(stream, account, token) with the
// reason, original subject, failure count, stream and time in headers. Its Nats-Msg-Id is
// stream + "-" + stream seq, so dead-lettering the same delivery twice stores one letter. The
// caller terminates the original only after this returns nil.
//
// (The brief named this function DeadLetter; Go cannot have a function and the DeadLetter type
// under one name, so the function carries the verb.)
func PublishDeadLetter(ctx context.Context, js jetstream.JetStream, n Names, m *Msg, stream, reason string, failures int) error {
	return publishDeadLetter(ctx, js, n, m, stream, stream+"-"+strconv.FormatUint(m.StreamSeq, 10), reason, failures, 0)
}

func publishDeadLetter(ctx context.Context, js jetstream.JetStream, n Names, m *Msg, stream, msgID, reason string, failures int, maxData int) error {
	account, token := m.Account, m.SessionToken
	if ValidAccount(account) != nil {
		account = "_"
	}
	if !isSafeToken(token) {
		token = "_"
	}
	hdr := nats.Header{}
	for k, v := range m.Header {
		if strings.HasPrefix(k, "Nats-") {
			continue // Nats-Msg-Id, Nats-Expected-* … belong to the original publish
		}
		hdr[k] = append([]string(nil), v...)
	}
	if orig := m.Header.Get(jetstream.MsgIDHeader); orig != "" {
		hdr.Set(HeaderDLQMsgID, orig)
	}
	hdr.Set(contract.HeaderDLQReason, headerSafe(reason))
	hdr.Set(contract.HeaderDLQSubject, headerSafe(m.Subject))
	hdr.Set(contract.HeaderDLQFailures, strconv.Itoa(failures))
	hdr.Set(contract.HeaderDLQStream, stream)
	hdr.Set(contract.HeaderDLQAt, time.Now().UTC().Format(time.RFC3339Nano))
	data := m.Data
	if maxData > 0 && len(data) > maxData {
		hdr.Set(HeaderDLQTruncated, strconv.Itoa(len(data)))
		data = data[:maxData]
	}
	if _, err := Publish(ctx, js, n.DLQ(stream, account, token), msgID, data, hdr); err != nil {
		return fmt.Errorf("dead-letter %s seq %d: %w", m.Subject, m.StreamSeq, err)
	}
	return nil
}

// headerSafe keeps a header value on one line and bounded.
func headerSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxReasonLen {
		s = s[:maxReasonLen] + "…"
	}
	return s
}

// ListDLQ lists up to limit dead letters (default 100), oldest first. filter is a subject
// filter under <p>.dlq.> ("" for all).
func ListDLQ(ctx context.Context, js jetstream.JetStream, n Names, filter string, limit int) ([]DeadLetter, error) {
	all := n.streamSubjects(StreamDLQ)
	if filter == "" {
		filter = all
	}
	if filter != all && !strings.HasPrefix(filter, n.p()+"."+categoryDLQ+".") {
		return nil, fmt.Errorf("list dlq: filter %q is not under %s", filter, all)
	}
	if limit <= 0 {
		limit = 100
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, n.Stream(StreamDLQ), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("list dlq: %w", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("list dlq: %w", err)
	}
	want := limit
	if info.NumPending < uint64(want) {
		want = int(info.NumPending)
	}
	out := make([]DeadLetter, 0, want)
	for len(out) < want {
		batch, err := cons.Fetch(want-len(out), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, fmt.Errorf("list dlq: %w", err)
		}
		got := 0
		for jm := range batch.Messages() {
			got++
			meta, err := jm.Metadata()
			if err != nil {
				return nil, fmt.Errorf("list dlq: %w", err)
			}
			out = append(out, newDeadLetter(meta.Sequence.Stream, jm.Subject(), jm.Headers(), jm.Data(), meta.Timestamp))
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("list dlq: %w", err)
		}
		if got == 0 {
			break // letters deleted meanwhile
		}
	}
	return out, nil
}

// GetDLQ returns the dead letter at DLQ stream sequence seq.
func GetDLQ(ctx context.Context, js jetstream.JetStream, n Names, seq uint64) (DeadLetter, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	s, err := js.Stream(ctx, n.Stream(StreamDLQ))
	if err != nil {
		return DeadLetter{}, fmt.Errorf("get dead letter %d: %w", seq, err)
	}
	raw, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return DeadLetter{}, fmt.Errorf("get dead letter %d: %w", seq, ErrDLQNotFound)
	}
	if err != nil {
		return DeadLetter{}, fmt.Errorf("get dead letter %d: %w", seq, err)
	}
	return newDeadLetter(raw.Sequence, raw.Subject, raw.Header, raw.Data, raw.Time), nil
}

// ReplayDLQ re-publishes the dead letter at seq to its original subject (with the original
// headers and Nats-Msg-Id "replay-<seq>-<original id>") and deletes the letter after the
// PubAck. A replay that fails leaves the letter in place.
func ReplayDLQ(ctx context.Context, js jetstream.JetStream, n Names, seq uint64) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	s, err := js.Stream(ctx, n.Stream(StreamDLQ))
	if err != nil {
		return fmt.Errorf("replay dead letter %d: %w", seq, err)
	}
	raw, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("replay dead letter %d: %w", seq, ErrDLQNotFound)
	}
	if err != nil {
		return fmt.Errorf("replay dead letter %d: %w", seq, err)
	}
	if raw.Header.Get(HeaderDLQTruncated) != "" {
		return fmt.Errorf("replay dead letter %d: payload was truncated (%s bytes originally): %w", seq, raw.Header.Get(HeaderDLQTruncated), ErrUnpublishable)
	}
	orig := raw.Header.Get(contract.HeaderDLQSubject)
	if orig == "" {
		return fmt.Errorf("replay dead letter %d: no %s header", seq, contract.HeaderDLQSubject)
	}
	hdr := nats.Header{}
	for k, v := range raw.Header {
		if strings.HasPrefix(k, "Membus-Dlq-") || strings.HasPrefix(k, "Nats-") {
			continue
		}
		hdr[k] = v
	}
	msgID := "replay-" + strconv.FormatUint(seq, 10) + "-" + raw.Header.Get(HeaderDLQMsgID)
	if _, err := Publish(ctx, js, orig, msgID, raw.Data, hdr); err != nil {
		return fmt.Errorf("replay dead letter %d: %w", seq, err)
	}
	if err := s.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("replay dead letter %d: published, but delete failed: %w", seq, err)
	}
	return nil
}

func newDeadLetter(seq uint64, subject string, hdr nats.Header, data []byte, stored time.Time) DeadLetter {
	failures, _ := strconv.Atoi(hdr.Get(contract.HeaderDLQFailures))
	at, err := time.Parse(time.RFC3339Nano, hdr.Get(contract.HeaderDLQAt))
	if err != nil {
		at = stored
	}
	env := contract.DLQEnvelope{
		V:               contract.Version,
		Stream:          hdr.Get(contract.HeaderDLQStream),
		OriginalSubject: hdr.Get(contract.HeaderDLQSubject),
		Reason:          hdr.Get(contract.HeaderDLQReason),
		Failures:        failures,
		At:              at,
		DLQSeq:          seq,
	}
	if json.Valid(data) {
		env.Payload = json.RawMessage(append([]byte(nil), data...))
	} else {
		env.PayloadText = string(data)
	}
	return DeadLetter{Seq: seq, Subject: subject, DLQEnvelope: env}
}
