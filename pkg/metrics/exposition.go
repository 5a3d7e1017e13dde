package metrics

import (
	"fmt"
	"io"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ParseExposition reads the Prometheus text exposition format (what /metrics serves) with the
// Prometheus parser itself, keyed by family name. Tests, `membus top` and the dashboard's
// checks use it; a scrape it cannot read is one Prometheus cannot read either.
func ParseExposition(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics exposition: %w", err)
	}
	return fams, nil
}

// Families gathers the registry by family name, as ParseExposition reads what /metrics serves.
func (m *Metrics) Families() (map[string]*dto.MetricFamily, error) {
	fams, err := m.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	out := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out, nil
}

// Value returns the value of the series of family name whose labels include every pair of
// match (counter, gauge or untyped; a histogram gives its sample count), summed over the
// matching series, and whether any matched.
func Value(fams map[string]*dto.MetricFamily, name string, match map[string]string) (float64, bool) {
	ms := matching(fams, name, match)
	sum := 0.0
	for _, m := range ms {
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, len(ms) > 0
}

// HistogramSum returns the sample sum and count of the histogram series of family name whose
// labels include every pair of match, summed over the matching series, and whether any
// matched: for a *_seconds histogram, the total time observed and how many observations.
func HistogramSum(fams map[string]*dto.MetricFamily, name string, match map[string]string) (sum float64, count uint64, ok bool) {
	ms := matching(fams, name, match)
	for _, m := range ms {
		sum += m.GetHistogram().GetSampleSum()
		count += m.GetHistogram().GetSampleCount()
	}
	return sum, count, len(ms) > 0
}

// matching returns the series of family name whose labels include every pair of match.
func matching(fams map[string]*dto.MetricFamily, name string, match map[string]string) []*dto.Metric {
	f, ok := fams[name]
	if !ok {
		return nil
	}
	var out []*dto.Metric
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range match {
			if have[k] != v {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}
