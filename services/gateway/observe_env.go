package gateway

import (
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/runtime"
)

// observe registers in the gateway's registry the figures read from the servers at each
// scrape and snapshot: JetStream consumer lag, ack-pending and redelivered counts, stream
// sizes and DLQ depth per source stream, and from SQL the outbox backlog, its oldest row's age
// and the active memories per category. The gateway carries them because it is the process an
// operator scrapes in every deployment (`membus up` or one process per service); replicas
// report the same values, so dashboards and rules take max() across instances.
func observe(m *metrics.Metrics, env *runtime.Env) {
	log := env.Logger.With("service", "gateway", "component", "observe")
	m.ObserveJetStream(env.JS, env.Names, log)
	m.ObserveStore(env.Store, nil, log)
}
