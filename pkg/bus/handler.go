package bus

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/membus/membus/pkg/outbox"

	"github.com/nats-io/nats.go"
)

// Msg is one delivered JetStream message as a handler sees it. Handlers never ack: the runner
// does, according to the handler's result.
type Msg struct {
	Subject      string
	Data         []byte
	Header       nats.Header
	Stream       string // the stream kind, e.g. StreamTurns
	StreamSeq    uint64
	NumDelivered uint64
	Account      string // parsed from the subject
	SessionToken string // parsed from the subject
	inProgress   func() error
}

// InProgress tells the server the message is still being worked on, extending its ack
// deadline. The runner already does this every AckWait/3 while a batch runs.
func (m *Msg) InProgress() error {
	if m.inProgress == nil {
		return nil
	}
	return m.inProgress()
}

// Handler handles one message. nil: the work is durable, ack. Permanent: dead-letter now.
// Busy: retry later, not counted. Any other error: a failure (or an outage, if a probe fails).
type Handler func(ctx context.Context, m *Msg) error

// BatchHandler handles the messages one Fetch returned (ingest writes one SQL transaction per
// batch) and returns one error slot per message, in order.
type BatchHandler func(ctx context.Context, msgs []*Msg) []error

// ErrUnpublishable marks an outbox row that can never be published (outbox.ErrUnpublishable).
var ErrUnpublishable = outbox.ErrUnpublishable

type permanentError struct{ err error }

func (e *permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as the message's own permanent failure (bad payload): the runner
// dead-letters the message at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err (or an error it wraps) was marked Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type busyError struct {
	err        error
	retryAfter time.Duration
}

func (e *busyError) Error() string {
	return fmt.Sprintf("busy (retry after %s): %v", e.retryAfter, e.err)
}
func (e *busyError) Unwrap() error { return e.err }

// DefaultBusyRetry is how long a service waits before it retries a message whose session lock
// another holder has (the retryAfter of Busy in extract and the summarizer).
const DefaultBusyRetry = 2 * time.Second

// Busy marks err as a held lock: the runner retries this message after retryAfter
// (NakWithDelay) without counting a failure, and keeps working on others. Busy(nil, d) is nil.
func Busy(err error, retryAfter time.Duration) error {
	if err == nil {
		return nil
	}
	return &busyError{err: err, retryAfter: retryAfter}
}

// IsBusy reports whether err was marked Busy and the delay it asked for.
func IsBusy(err error) (time.Duration, bool) {
	var b *busyError
	if errors.As(err, &b) {
		return b.retryAfter, true
	}
	return 0, false
}

// ErrPanic wraps a handler panic, which the runner turns into an ordinary failure (counted,
// retried, dead-lettered after MaxFailures) and logs with its stack.
var ErrPanic = errors.New("handler panic")

func stackTrace() string { return string(debug.Stack()) }
