package metrics

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/membus/membus/pkg/bus"
)

// observeTimeout bounds the server and SQL queries of one collection (a scrape or a snapshot).
const observeTimeout = 3 * time.Second

// JetStream figures, read from the server at every collection (SPEC §2.7; issue 15).
const (
	nameConsumerPending    = Prefix + "jetstream_consumer_pending_messages"
	nameConsumerAckPending = Prefix + "jetstream_consumer_ack_pending_messages"
	nameConsumerRedeliver  = Prefix + "jetstream_consumer_redelivered_messages"
	nameConsumerWaiting    = Prefix + "jetstream_consumer_waiting_pulls"
	nameStreamMessages     = Prefix + "jetstream_stream_messages"
	nameStreamBytes        = Prefix + "jetstream_stream_bytes"
	nameDLQMessages        = Prefix + "dlq_messages"
	nameJetStreamUp        = Prefix + "observe_jetstream_up"
)

// jetStreamCollector reads consumer info of every consumer of the work streams and the DLQ's
// per-subject counts from the server each time it is collected: the figures are the server's
// own, so they agree with `nats consumer info` and `nats stream info`.
type jetStreamCollector struct {
	js    jetstream.JetStream
	names bus.Names
	log   *slog.Logger
	pending, ackPending, redelivered, waiting,
	streamMsgs, streamBytes, dlq, up *prometheus.Desc
}

// ObserveJetStream registers a collector of the deployment's JetStream figures in m: per
// durable consumer pending, ack-pending, redelivered and waiting counts (labels stream,
// consumer), messages and bytes per stream, dead letters per source stream (label stream:
// turns, commits, events, outbox) and membus_observe_jetstream_up. Collection never
// fails the scrape: a server that does not answer sets membus_observe_jetstream_up to 0.
func (m *Metrics) ObserveJetStream(js jetstream.JetStream, names bus.Names, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cl := prometheus.Labels{"service": m.service}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, cl)
	}
	m.Registry.MustRegister(&jetStreamCollector{
		js: js, names: names, log: log,
		pending:     d(nameConsumerPending, "Messages of the stream that match the durable consumer and are not delivered yet (JetStream num_pending): the consumer lag.", "stream", "consumer"),
		ackPending:  d(nameConsumerAckPending, "Messages delivered to the consumer and not acked yet (num_ack_pending).", "stream", "consumer"),
		redelivered: d(nameConsumerRedeliver, "Messages redelivered at least once and not acked yet (num_redelivered).", "stream", "consumer"),
		waiting:     d(nameConsumerWaiting, "Pull requests waiting on the consumer (num_waiting): 0 means no replica is fetching.", "stream", "consumer"),
		streamMsgs:  d(nameStreamMessages, "Messages stored in the stream.", "stream"),
		streamBytes: d(nameStreamBytes, "Bytes stored in the stream.", "stream"),
		dlq:         d(nameDLQMessages, "Dead letters in the DLQ stream, by the stream the letter came from (turns, commits, events, outbox).", "stream"),
		up:          d(nameJetStreamUp, "1 when the last collection of the JetStream figures succeeded, else 0."),
	})
}

func (c *jetStreamCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.ackPending, c.redelivered, c.waiting, c.streamMsgs, c.streamBytes, c.dlq, c.up} {
		ch <- d
	}
}

func (c *jetStreamCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), observeTimeout)
	defer cancel()
	up := 1.0
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, kind := range []string{bus.StreamTurns, bus.StreamCommits, bus.StreamEvents} {
		name := c.names.Stream(kind)
		s, err := c.js.Stream(ctx, name)
		if err != nil {
			c.log.Warn("observe stream", "stream", name, "err", err)
			up = 0
			continue
		}
		info, err := s.Info(ctx)
		if err != nil {
			c.log.Warn("observe stream", "stream", name, "err", err)
			up = 0
			continue
		}
		gauge(c.streamMsgs, float64(info.State.Msgs), name)
		gauge(c.streamBytes, float64(info.State.Bytes), name)
		lister := s.ListConsumers(ctx)
		for ci := range lister.Info() {
			if ci.Config.Durable == "" {
				continue // ordered and ephemeral consumers (tail, dlq ls) come and go
			}
			gauge(c.pending, float64(ci.NumPending), name, ci.Name)
			gauge(c.ackPending, float64(ci.NumAckPending), name, ci.Name)
			gauge(c.redelivered, float64(ci.NumRedelivered), name, ci.Name)
			gauge(c.waiting, float64(ci.NumWaiting), name, ci.Name)
		}
		if err := lister.Err(); err != nil {
			c.log.Warn("observe consumers", "stream", name, "err", err)
			up = 0
		}
	}
	if depth, err := DLQDepth(ctx, c.js, c.names, ""); err != nil {
		c.log.Warn("observe dlq", "err", err)
		up = 0
	} else {
		for _, k := range sortedKeys(depth) {
			gauge(c.dlq, float64(depth[k]), k)
		}
	}
	gauge(c.up, up)
}

// DLQDepth counts the dead letters of account ("" for every account) by the stream they came
// from (the token after <p>.dlq.): always turns, commits, events and outbox, zero when empty.
func DLQDepth(ctx context.Context, js jetstream.JetStream, names bus.Names, account string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, k := range []string{bus.StreamTurns, bus.StreamCommits, bus.StreamEvents} {
		out[strings.ToLower(k)] = 0
	}
	out[bus.StreamOutbox] = 0
	s, err := js.Stream(ctx, names.Stream(bus.StreamDLQ))
	if err != nil {
		return nil, err
	}
	prefix := dlqPrefix(names)
	filter := prefix + ">"
	if account != "" {
		filter = prefix + "*." + account + ".*"
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, err
	}
	for subject, n := range info.State.Subjects {
		rest := strings.TrimPrefix(subject, prefix)
		kind, _, _ := strings.Cut(rest, ".")
		out[kind] += n
	}
	return out, nil
}

// dlqPrefix is "<p>.dlq.".
func dlqPrefix(names bus.Names) string {
	full := names.DLQ("x", "y", "z") // <p>.dlq.x.y.z
	return strings.TrimSuffix(full, "x.y.z")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
