package qdrant

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"github.com/membus/membus/pkg/vector"
)

// Defaults of Config.
const (
	DefaultTimeout = 5 * time.Second
	// DefaultBM25AvgLen is the average document length (in vector.Terms
	// terms) recorded with a new collection. Memories are one or two
	// sentences: about a dozen terms once stop words are gone.
	DefaultBM25AvgLen = 12.0
	// DefaultGRPCPort is Qdrant's gRPC port; 6333 is its REST port.
	DefaultGRPCPort = 6334
)

// Config says where the collection lives and which embedding model fills it.
type Config struct {
	// URL is http://host[:port] or https://host[:port] (TLS) of Qdrant's gRPC
	// endpoint; the port defaults to 6334. An api-key query parameter is
	// the API key (MEMBUS_QDRANT_URL carries it that way).
	URL string
	// APIKey, when set, wins over the URL's api-key.
	APIKey string
	// Collection is the one collection of the deployment (required: the deployment's
	// MEMBUS_QDRANT_COLLECTION, whose default pkg/config owns).
	Collection string
	// Model and Dim are the embedder's model id and dimension. An existing
	// collection of another model or dimension is ErrModelMismatch. Both
	// empty adopt what the collection stores (ErrNoCollection without one).
	Model string
	Dim   int
	// Timeout bounds every call to Qdrant (default 5 s).
	Timeout time.Duration
	// BM25AvgLen is the average document length written into a new
	// collection's metadata; an existing collection keeps its own.
	BM25AvgLen float64
	// DialOptions are extra gRPC dial options (the tests dial the fake
	// server through bufconn with them).
	DialOptions []grpc.DialOption
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.BM25AvgLen <= 0 {
		c.BM25AvgLen = DefaultBM25AvgLen
	}
	return c
}

type endpoint struct {
	host   string
	port   int
	tls    bool
	apiKey string
}

func parseURL(raw, apiKey string) (endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return endpoint{}, fmt.Errorf("qdrant url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return endpoint{}, fmt.Errorf("qdrant url %q: scheme must be http or https: %w", u.Redacted(), vector.ErrInvalid)
	}
	if u.Hostname() == "" {
		return endpoint{}, fmt.Errorf("qdrant url %q: no host: %w", u.Redacted(), vector.ErrInvalid)
	}
	e := endpoint{host: u.Hostname(), port: DefaultGRPCPort, tls: u.Scheme == "https", apiKey: apiKey}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return endpoint{}, fmt.Errorf("qdrant url: bad port %q: %w", p, vector.ErrInvalid)
		}
		e.port = n
	}
	if e.apiKey == "" {
		e.apiKey = u.Query().Get("api-key")
	}
	return e, nil
}
