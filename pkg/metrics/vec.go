package metrics

import "github.com/prometheus/client_golang/prometheus"

// HistogramVec returns the latency histogram vector membus_<name> in seconds (LatencyBuckets)
// with the given label names; name it *_seconds. Label values must be bounded and never user
// text (a route pattern, an outcome, a status code).
func (m *Metrics) HistogramVec(name, help string, labels ...string) *prometheus.HistogramVec {
	return m.get(name, "histogram", labels, func(o prometheus.Opts) prometheus.Collector {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: o.Name, Help: o.Help,
			ConstLabels: o.ConstLabels, Buckets: LatencyBuckets}, labels)
	}, help).(*prometheus.HistogramVec)
}

// GaugeVec returns the gauge vector membus_<name> with the given label names.
func (m *Metrics) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return m.get(name, "gauge", labels, func(o prometheus.Opts) prometheus.Collector {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts(o), labels)
	}, help).(*prometheus.GaugeVec)
}
