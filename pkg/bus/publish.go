package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrMissingMsgID is returned by Publish when no Nats-Msg-Id is given: every JetStream publish
// of membus carries a deterministic id so that a retry is deduplicated.
var ErrMissingMsgID = errors.New("publish: missing Nats-Msg-Id")

// Publish publishes data to a stream subject with Nats-Msg-Id = msgID and waits for the
// PubAck (ack.Duplicate reports a publish the stream deduplicated). hdr is copied, not changed.
func Publish(ctx context.Context, js jetstream.JetStream, subject, msgID string, data []byte, hdr nats.Header) (*jetstream.PubAck, error) {
	if msgID == "" {
		return nil, fmt.Errorf("%w (subject %s)", ErrMissingMsgID, subject)
	}
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	for k, v := range hdr {
		msg.Header[k] = append([]string(nil), v...)
	}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("publish %s (msg id %s): %w", subject, msgID, err)
	}
	return ack, nil
}

// PublishJSON marshals v and publishes it like Publish.
func PublishJSON(ctx context.Context, js jetstream.JetStream, subject, msgID string, v any) (*jetstream.PubAck, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("publish %s: marshal: %w", subject, err)
	}
	return Publish(ctx, js, subject, msgID, data, nil)
}
