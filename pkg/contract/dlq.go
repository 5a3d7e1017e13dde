package contract

import (
	"encoding/json"
	"time"
)

// DLQ headers set on every dead letter (the envelope mirrors them for `membus dlq show`).
const (
	HeaderDLQReason   = "Membus-Dlq-Reason"
	HeaderDLQSubject  = "Membus-Dlq-Subject"
	HeaderDLQFailures = "Membus-Dlq-Failures"
	HeaderDLQStream   = "Membus-Dlq-Stream"
	HeaderDLQAt       = "Membus-Dlq-At"
)

// DLQEnvelope describes one dead letter: the original payload (kept verbatim as the message
// data) plus why it was dead-lettered. It is what `membus dlq show --json` prints.
type DLQEnvelope struct {
	V               int             `json:"v"`
	Stream          string          `json:"stream"`
	OriginalSubject string          `json:"original_subject"`
	Reason          string          `json:"reason"`
	Failures        int             `json:"failures"`
	At              time.Time       `json:"at"`
	DLQSeq          uint64          `json:"dlq_seq,omitempty"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	PayloadText     string          `json:"payload_text,omitempty"`
}
