package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/bus/callout"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/llm"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/services/extract"
	"github.com/membus/membus/services/gateway"
	"github.com/membus/membus/services/ingest"
	"github.com/membus/membus/services/recall"
	"github.com/membus/membus/services/summarizer"
)

// Services are the services of membus in the order `membus up` starts them; `membus <name>`
// runs one of them alone.
var Services = []string{"ingest", "extract", "recall", "summarizer", "gateway"}

// builders wire each service: its Config from the shared configuration, its Deps from env.
// This is the only place where a service meets the concrete adapters.
var builders = map[string]func(env *Env) (Runnable, error){
	"ingest":     func(env *Env) (Runnable, error) { return Ingest(env) },
	"extract":    func(env *Env) (Runnable, error) { return Extract(env) },
	"recall":     func(env *Env) (Runnable, error) { return Recall(env) },
	"summarizer": func(env *Env) (Runnable, error) { return Summarizer(env) },
	"gateway":    func(env *Env) (Runnable, error) { return Gateway(env) },
}

// Build builds the named service on env.
func Build(env *Env, name string) (Runnable, error) {
	b, ok := builders[name]
	if !ok {
		return nil, fmt.Errorf("unknown service %q (one of %v)", name, Services)
	}
	s, err := b(env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// BuildAll builds every service on one environment (`membus up`): the same builders the
// single-service commands use.
func BuildAll(env *Env) ([]Runnable, error) {
	out := make([]Runnable, 0, len(Services))
	for _, name := range Services {
		s, err := Build(env, name)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// The service configurations from the shared one: each service's Config owns its defaults and
// validation; these set the keys an operator can change (TestConfigDefaultsAgree checks that the
// shared defaults are the services' own).

func ingestConfig(c config.Config) ingest.Config {
	cfg := ingest.Defaults()
	cfg.CommitTokenThreshold = c.CommitTokenThreshold
	cfg.BypassSessionPatterns = config.SplitList(c.BypassSessionPatterns)
	cfg.AgentPrefix = c.AgentPrefix
	cfg.RedactPatterns = config.SplitList(c.RedactPatterns)
	cfg.IdleCommit = c.IdleCommitDuration()
	cfg.Workers = c.IngestWorkers
	return cfg
}

func extractConfig(c config.Config) extract.Config {
	cfg := extract.Defaults()
	cfg.KeepRecent = c.KeepRecent
	return cfg
}

func summarizerConfig(c config.Config) summarizer.Config {
	cfg := summarizer.Defaults()
	cfg.Location = c.Location()
	return cfg
}

func gatewayConfig(c config.Config) gateway.Config {
	cfg := gateway.Defaults()
	cfg.Addr = c.HTTPAddr
	cfg.InsecureNoAuth = c.InsecureNoAuth
	cfg.RateLimit, cfg.RateBurst = float64(c.RateLimit), c.RateBurst
	return cfg
}

// Ingest builds the ingest service.
func Ingest(env *Env) (*ingest.Service, error) {
	return ingest.New(ingestConfig(env.Config), ingest.Deps{
		JS: env.JS, Names: env.Names, Store: env.Store, Sessions: env.Sessions, Metrics: env.Metrics("ingest"),
		Logger: env.Logger.With("service", "ingest"), KickOutbox: env.Relay.Kick, Probes: env.Probes("redis", "nats"),
	})
}

// Extract builds the extract service. With MEMBUS_LLM_BASE_URL set, memories are extracted by
// the LLM extractor on that endpoint (falling back to the heuristic one per batch when it
// fails); otherwise by the heuristic one.
func Extract(env *Env) (*extract.Service, error) {
	cfg := extractConfig(env.Config)
	m := env.Metrics("extract")
	logger := env.Logger.With("service", "extract")
	// One extractor is built: the heuristic one loads its tagger's model (about 27 MB), and the
	// LLM extractor holds its own heuristic fallback.
	var extractor memory.Extractor
	if env.Config.LLMBaseURL == "" {
		extractor = memory.NewHeuristic()
	} else {
		client, err := llm.New(llm.Config{BaseURL: env.Config.LLMBaseURL, Model: env.Config.LLMModel, APIKey: env.Config.LLMAPIKey,
			Logger: logger.With("component", "llm")}, m)
		if err != nil {
			return nil, err
		}
		extractor = memory.NewLLM(client, m, memory.WithLogger(logger.With("component", "extractor")))
		logger.Info("memory extraction by LLM", "model", env.Config.LLMModel, "fallback", "heuristic")
	}
	return extract.New(cfg, extract.Deps{
		NC: env.NC, JS: env.JS, Names: env.Names, Store: env.Store, Locker: env.Locker,
		Extractor: extractor, Embedder: env.Embedder, Vectors: env.Vectors,
		Metrics: m, Logger: logger,
		KickOutbox: env.Relay.Kick, Probes: env.Probes("redis", "nats", "vectors", "embedder"),
	})
}

// Recall builds the recall service.
func Recall(env *Env) (*recall.Service, error) {
	cfg, err := recall.ConfigFrom(recall.Defaults(), env.Config)
	if err != nil {
		return nil, err
	}
	m := env.Metrics("recall")
	if local, ok := env.Vectors.(*vector.Local); ok {
		m.GaugeFunc("vector_index_points", "Points in this process's local vector index (memories, digests, archived messages).", func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			n, err := local.Len(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		})
	}
	if f := env.Follower; f != nil {
		m.GaugeFunc("recall_index_lag_events", "Events of MEMBUS_EVENTS this replica's local index has not applied yet (its catch-up lag).",
			func() float64 { return float64(f.Lag()) })
	}
	d := recall.Deps{
		NC: env.NC, Names: env.Names, Store: env.Store, Sessions: env.Sessions, Embedder: env.Embedder, Vectors: env.Vectors,
		Metrics: m, Logger: env.Logger.With("service", "recall"), KickOutbox: env.Relay.Kick,
	}
	if f := env.Follower; f != nil {
		d.Sync = func(ctx context.Context) error { return f.Sync(ctx, time.Second) }
	}
	return recall.New(cfg, d)
}

// Summarizer builds the summarizer service. With MEMBUS_LLM_BASE_URL set, overviews and
// digests are written by the LLM summarizer on that endpoint (falling back to the extractive
// one when it fails); otherwise by the extractive one. The schedule runs in MEMBUS_TZ.
func Summarizer(env *Env) (*summarizer.Service, error) {
	cfg := summarizerConfig(env.Config)
	m := env.Metrics("summarizer")
	logger := env.Logger.With("service", "summarizer")
	var sum summarizer.Summarizer = summarizer.Extractive{}
	if env.Config.LLMBaseURL != "" {
		client, err := llm.New(llm.Config{BaseURL: env.Config.LLMBaseURL, Model: env.Config.LLMModel, APIKey: env.Config.LLMAPIKey,
			Logger: logger.With("component", "llm")}, m)
		if err != nil {
			return nil, err
		}
		sum = summarizer.NewLLM(client, summarizer.Extractive{}, m, logger.With("component", "llm-summarizer"))
		logger.Info("summaries by LLM", "model", env.Config.LLMModel, "fallback", "extractive")
	}
	return summarizer.New(cfg, summarizer.Deps{
		NC: env.NC, JS: env.JS, Names: env.Names, Store: env.Store, Locker: env.Locker,
		Embedder: env.Embedder, Vectors: env.Vectors, Summarizer: sum,
		Metrics: m, Logger: logger,
		// Not Qdrant's or the embedder's probe: the runner's archive_created events never use
		// them (the scheduler's digests do, outside the runner), and a probe of what a handler
		// does not use would pause the overviews for an outage they do not suffer.
		KickOutbox: env.Relay.Kick, Probes: env.Probes("redis", "nats"),
	})
}

// Gateway builds the HTTP gateway. Its /readyz checks the NATS connection itself and these
// probes besides it.
func Gateway(env *Env) (*gateway.Service, error) {
	cfg := gatewayConfig(env.Config)
	cfg.TLS = env.TLS
	m := env.Metrics("gateway")
	// The figures read from the servers at each scrape and snapshot — JetStream consumer lag,
	// ack-pending and redelivered counts, stream sizes and DLQ depth, and from SQL the outbox
	// backlog and the active memories per category — ride on the gateway's registry: it is the
	// process an operator scrapes in every deployment. Replicas report the same values, so
	// dashboards and rules take max() across instances.
	obs := env.Logger.With("service", "gateway", "component", "observe")
	m.ObserveJetStream(env.JS, env.Names, obs)
	m.ObserveStore(env.Store, nil, obs)
	deps := gateway.Deps{
		NC: env.NC, JS: env.JS, Names: env.Names, Keys: env.Store, Metrics: m,
		Logger: env.Logger.With("service", "gateway"), Ready: env.Probes("sql", "redis"), MetricsHandler: env.MetricsHandler(),
	}
	if env.Redis != nil { // a typed nil must not become a non-nil interface
		deps.Redis = env.Redis
	}
	if err := env.serveCallout(); err != nil {
		return nil, err
	}
	return gateway.New(cfg, deps)
}

// serveCallout answers the NATS server's auth callout (nats_auth: keys): the gateway is the
// door of the bus as of HTTP, so its replicas bind API keys to subject permissions. A server
// in token mode sends no callouts, and the subscription stays idle.
func (e *Env) serveCallout() error {
	if e.Config.NATSAuth != "keys" {
		return nil
	}
	if e.Config.NATSToken == "" {
		if e.Config.NATSPassword != "" {
			// Handed only its password, the gateway could not sign the callout's answers, and
			// no API key could reach the bus.
			return errors.New("the gateway needs MEMBUS_NATS_TOKEN (it derives the auth callout's issuer from it), not only MEMBUS_NATS_PASSWORD")
		}
		return nil // a server without auth sends no callouts
	}
	issuer, err := callout.IssuerFromToken(e.Config.NATSToken)
	if err != nil {
		return err
	}
	r, err := callout.Serve(e.NC, callout.Config{Names: e.Names, Issuer: issuer, Lookup: keyGrant(e.Store),
		Logger: e.Logger.With("component", "nats-auth")})
	if err != nil {
		return err
	}
	e.onClose("nats auth callout", r.Stop)
	return nil
}

// keyGrant maps an API key to what it may do on the bus: an admin key its account, a user
// key its user's data RPCs, an operator key the stats of every account.
func keyGrant(keys *store.Store) callout.Lookup {
	return func(ctx context.Context, secret string) (bus.Grant, error) {
		k, err := keys.LookupKey(ctx, secret)
		if errors.Is(err, store.ErrNotFound) {
			return bus.Grant{}, callout.ErrUnknownKey
		}
		if err != nil {
			return bus.Grant{}, err
		}
		g := bus.Grant{Account: k.AccountID, User: k.UserID, KeyID: k.ID}
		switch k.Role {
		case store.RoleAdmin:
			g.Scope = bus.ScopeAccount
		case store.RoleUser:
			g.Scope = bus.ScopeUser
		case store.RoleOperator:
			g.Scope = bus.ScopeOps
		default:
			return bus.Grant{}, fmt.Errorf("key %s has unknown role %q", k.ID, k.Role)
		}
		return g, nil
	}
}
