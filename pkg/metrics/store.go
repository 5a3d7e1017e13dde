package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StoreSource is what the SQL collector reads; *store.Store implements it.
type StoreSource interface {
	// OutboxBacklog counts the unpublished outbox rows and gives the oldest one's creation time.
	OutboxBacklog(ctx context.Context) (int64, time.Time, error)
	// CategoryStats counts active memories by category; account "" means every account.
	CategoryStats(ctx context.Context, account string) (map[string]int64, error)
}

// SQL figures.
const (
	nameOutboxPending   = Prefix + "outbox_pending_rows"
	nameOutboxOldestAge = Prefix + "outbox_oldest_pending_age_seconds"
	nameMemoriesActive  = Prefix + "memories_active"
	nameSQLUp           = Prefix + "observe_sql_up"
)

type storeCollector struct {
	src                              StoreSource
	now                              func() time.Time
	log                              *slog.Logger
	pending, oldestAge, memories, up *prometheus.Desc
}

// ObserveStore registers a collector of the SQL figures in m: the outbox backlog
// (membus_outbox_pending_rows) and the age of its oldest row in seconds (0 when empty), the
// active memories per category across accounts (membus_memories_active{category}), and
// membus_observe_sql_up. now nil means time.Now.
func (m *Metrics) ObserveStore(src StoreSource, now func() time.Time, log *slog.Logger) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cl := prometheus.Labels{"service": m.service}
	m.Registry.MustRegister(&storeCollector{
		src: src, now: now, log: log,
		pending:   prometheus.NewDesc(nameOutboxPending, "Outbox rows written by a committed transaction and not yet published to JetStream.", nil, cl),
		oldestAge: prometheus.NewDesc(nameOutboxOldestAge, "Age in seconds of the oldest unpublished outbox row; 0 when the outbox is empty.", nil, cl),
		memories:  prometheus.NewDesc(nameMemoriesActive, "Active memories (not expired, superseded or duplicate) by category, across accounts.", []string{"category"}, cl),
		up:        prometheus.NewDesc(nameSQLUp, "1 when the last collection of the SQL figures succeeded, else 0.", nil, cl),
	})
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.oldestAge
	ch <- c.memories
	ch <- c.up
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), observeTimeout)
	defer cancel()
	up := 1.0
	if n, oldest, err := c.src.OutboxBacklog(ctx); err != nil {
		c.log.Warn("observe outbox", "err", err)
		up = 0
	} else {
		age := 0.0
		if !oldest.IsZero() {
			age = max(0, c.now().Sub(oldest).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(n))
		ch <- prometheus.MustNewConstMetric(c.oldestAge, prometheus.GaugeValue, age)
	}
	if cats, err := c.src.CategoryStats(ctx, ""); err != nil {
		c.log.Warn("observe memories", "err", err)
		up = 0
	} else {
		for _, k := range sortedKeys(cats) {
			ch <- prometheus.MustNewConstMetric(c.memories, prometheus.GaugeValue, float64(cats[k]), k)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}
