// Package metrics gives each service its own Prometheus registry (several services share one
// process in embedded mode) and publishes a JSON snapshot of it on core NATS for the ops
// dashboards (docs/design.md §2.7). Metrics carry counts and latencies, never user text.
package metrics

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prefix starts every metric name a service defines.
const Prefix = "membus_"

// LatencyBuckets are the histogram buckets in seconds, 0.5 ms to 10 s.
var LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Metrics is one service's registry. Metric names get the membus_ prefix and a constant
// label service=<service>; asking twice for the same name returns the same metric.
type Metrics struct {
	Registry *prometheus.Registry

	service  string
	instance string
	start    time.Time

	mu      sync.Mutex
	metrics map[string]registered
}

type registered struct {
	kind   string
	labels string
	c      prometheus.Collector
}

// New returns the metrics of one service instance with its own registry (never the global
// default one), including the Go runtime and process collectors.
func New(service, instance string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Metrics{Registry: reg, service: service, instance: instance, start: time.Now(),
		metrics: map[string]registered{}}
}

// Service is the service name the metrics were created for.
func (m *Metrics) Service() string { return m.service }

// Instance is the instance id the metrics were created for.
func (m *Metrics) Instance() string { return m.instance }

func fullName(name string) string {
	if strings.HasPrefix(name, Prefix) {
		return name
	}
	return Prefix + name
}

// get returns the metric registered under name, creating it with mk on first use. Asking for
// an existing name with another kind or other labels is a programming error and panics.
func (m *Metrics) get(name, kind string, labels []string, mk func(opts prometheus.Opts) prometheus.Collector, help string) prometheus.Collector {
	name = fullName(name)
	key := strings.Join(labels, ",")
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.metrics[name]; ok {
		if r.kind != kind || r.labels != key {
			panic(fmt.Sprintf("metrics: %s is a %s{%s}, asked for a %s{%s}", name, r.kind, r.labels, kind, key))
		}
		return r.c
	}
	c := mk(prometheus.Opts{Name: name, Help: help, ConstLabels: prometheus.Labels{"service": m.service}})
	m.Registry.MustRegister(c)
	m.metrics[name] = registered{kind: kind, labels: key, c: c}
	return c
}

// Counter returns the counter membus_<name>.
func (m *Metrics) Counter(name, help string) prometheus.Counter {
	return m.get(name, "counter", nil, func(o prometheus.Opts) prometheus.Collector {
		return prometheus.NewCounter(prometheus.CounterOpts(o))
	}, help).(prometheus.Counter)
}

// CounterVec returns the counter vector membus_<name> with the given label names. Label
// values must be bounded and never user text.
func (m *Metrics) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return m.get(name, "counter", labels, func(o prometheus.Opts) prometheus.Collector {
		return prometheus.NewCounterVec(prometheus.CounterOpts(o), labels)
	}, help).(*prometheus.CounterVec)
}

// Gauge returns the gauge membus_<name>.
func (m *Metrics) Gauge(name, help string) prometheus.Gauge {
	return m.get(name, "gauge", nil, func(o prometheus.Opts) prometheus.Collector {
		return prometheus.NewGauge(prometheus.GaugeOpts(o))
	}, help).(prometheus.Gauge)
}

// GaugeFunc registers the gauge membus_<name>, read from f whenever the registry is gathered
// (a scrape of /metrics, a snapshot).
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.get(name, "gauge", nil, func(o prometheus.Opts) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts(o), f)
	}, help)
}

// Histogram returns the latency histogram membus_<name> in seconds (LatencyBuckets); name it
// *_seconds.
func (m *Metrics) Histogram(name, help string) prometheus.Histogram {
	return m.get(name, "histogram", nil, func(o prometheus.Opts) prometheus.Collector {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: o.Name, Help: o.Help,
			ConstLabels: o.ConstLabels, Buckets: LatencyBuckets})
	}, help).(prometheus.Histogram)
}

// Handler serves this registry in the Prometheus exposition format (/metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
