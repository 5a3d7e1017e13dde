package ingest

import (
	"time"

	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/stages"
	"github.com/membus/membus/pkg/store"
)

// Metrics of where ingest's time goes (names without metrics.Prefix). StageMetric has one
// series per stage of Stages; each batch observes the stages it went through.
const (
	HandlerMetric = "ingest_handler_seconds"
	StageMetric   = "ingest_stage_seconds"
)

// Stages of ingest's own, besides those of the stores it writes through (store.StageSQLBegin
// …, session.StageRedisCache …).
const (
	// StageDecode is the UTF-8 check, the JSON decode and the validation of each event against
	// its subject.
	StageDecode = "decode"
	// StageRedact is the capture of each event's messages: the pre-prompt cut, injected blocks
	// stripped, secrets redacted, parts re-encoded, tokens counted.
	StageRedact = "redact"
	// StageDedupCheck looks a redelivered event's messages up in the dedup keys (Redis; never
	// on a first delivery).
	StageDedupCheck = "dedup_check"
	// StageAck is the runner sending the acks of the batch's stored messages, after the handler
	// returned (unconfirmed: bus.Runner does not wait for the server's reply).
	StageAck = "ack"
)

// Stages are the stage label values of StageMetric in pipeline order. All but StageAck run
// inside the batch handler and partition HandlerMetric but for the bookkeeping between them;
// StageAck comes after it.
func Stages() []string {
	return []string{StageDecode, StageRedact, StageDedupCheck,
		store.StageSQLBegin, store.StageSQLSessions, store.StageSQLMessages, store.StageOutbox, store.StageSQLCommit,
		session.StageRedisCache, session.StageRedisDedup, StageAck}
}

// stageMetrics records each batch's handler time and stage times.
type stageMetrics struct {
	handler func(seconds float64)
	stage   func(stage string, seconds float64)
}

func newStageMetrics(m *metrics.Metrics) stageMetrics {
	vec := m.HistogramVec(StageMetric, "Time one fetched batch spent in each ingest stage (decode, redact, dedup_check, sql_begin, "+
		"sql_sessions, sql_messages, outbox, sql_commit, redis_cache, redis_dedup inside the handler; ack after it).", "stage")
	return stageMetrics{
		handler: m.Histogram(HandlerMetric, "Time the batch handler took per fetched batch, every batch (decode to the Redis writes; the ack follows).").Observe,
		stage:   func(stage string, seconds float64) { vec.WithLabelValues(stage).Observe(seconds) },
	}
}

// observe records one batch: the handler's time and each stage tm timed.
func (sm stageMetrics) observe(tm *stages.Timer, handler time.Duration) {
	sm.handler(handler.Seconds())
	for stage, d := range tm.Durations() {
		sm.stage(stage, d.Seconds())
	}
}

// acked records the runner's ack of one batch (bus.RunnerConfig.OnAcked).
func (sm stageMetrics) acked(_ int, took time.Duration) {
	sm.stage(StageAck, took.Seconds())
}
