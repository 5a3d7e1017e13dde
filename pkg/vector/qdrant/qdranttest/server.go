// Package qdranttest is a FAKE Qdrant: an in-process gRPC server built on the
// server interfaces that github.com/qdrant/go-client generates
// (CollectionsServer, PointsServer, QdrantServer), served over bufconn. It is
// not Qdrant and proves nothing about Qdrant itself; it exists because no
// Qdrant server can run where these tests run.
//
// It follows Qdrant's documented rules for what the membus adapter uses:
//
//   - point ids are UUIDs or unsigned integers; anything else is
//     InvalidArgument; UUIDs come back in canonical lower-case form and
//     order as 128-bit numbers after every integer id;
//   - named dense vectors with the configured size (others InvalidArgument);
//     cosine vectors are stored L2-normalised, as Qdrant stores them;
//   - sparse vectors with unique indices; the IDF modifier multiplies each
//     query dimension by ln((N − n + 0.5)/(n + 0.5) + 1), N the points with
//     that sparse vector, n those with the dimension; sparse search returns
//     only points sharing a dimension with the query;
//   - filters: must (all), should (at least one), must_not (none),
//     min_should; keyword match against a payload string or any element of a
//     list; has_id; nested filters; is_empty; is_null. Any other condition is
//     Unimplemented, never silently true;
//   - Query: nearest (dense cosine, sparse dot product), prefetch (the
//     parent filter applies to every prefetch), RRF fusion (1/(k + rank),
//     rank from 1, k = 2 unless given), score order with ties by id, limit,
//     offset, score threshold;
//   - scroll in id order with an inclusive offset and next_page_offset;
//   - unknown collections are NotFound; creating an existing one is
//     AlreadyExists; collection metadata and payload indexes are kept and
//     reported by Get.
//
// What it does not model: HNSW approximation (search is exact), segments,
// consistency and write ordering (every write is applied before it
// returns), strict mode, authentication, quotas, snapshots and clustering.
package qdranttest

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
)

// Version is the Qdrant version the fake reports.
const Version = "1.17.0"

// Server is the fake. Its zero value is not usable: call New or Start.
type Server struct {
	lis *bufconn.Listener
	srv *grpc.Server

	mu      sync.Mutex
	cols    map[string]*collection
	queries []*qdrant.QueryPoints
	down    atomic.Bool
}

// New starts a fake server; Close stops it.
func New() *Server {
	s := &Server{lis: bufconn.Listen(1 << 20), cols: map[string]*collection{}}
	s.srv = grpc.NewServer(grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
		MinTime:             time.Second, // the go-client pings every 10 s, also when idle
		PermitWithoutStream: true,
	}), grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if s.down.Load() {
			return nil, status.Error(codes.Unavailable, "qdranttest: the server is down (SetDown)")
		}
		return h(ctx, req)
	}))
	qdrant.RegisterCollectionsServer(s.srv, &collectionsService{s: s})
	qdrant.RegisterPointsServer(s.srv, &pointsService{s: s})
	qdrant.RegisterQdrantServer(s.srv, &healthService{})
	go func() { _ = s.srv.Serve(s.lis) }()
	return s
}

// Start starts a fake server that stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := New()
	t.Cleanup(s.Close)
	return s
}

// Close stops the server; calls in flight fail and new connections are
// refused (the "Qdrant is down" fault).
func (s *Server) Close() {
	s.srv.Stop()
	_ = s.lis.Close()
}

// SetDown makes every call fail with Unavailable while down is true, as calls to a Qdrant
// that cannot be reached fail, and answers again with the same data once it is false (the
// "Qdrant is down for a while" fault; Close is the one that does not come back).
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// URL is a URL for the adapter's Config; the address is never dialled, the
// DialOptions route every connection to the fake.
func (s *Server) URL() string { return "http://127.0.0.1:6334" }

// DialOptions connect a gRPC client to the fake.
func (s *Server) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return s.lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}
}

// Queries returns copies of every QueryPoints request received so far.
func (s *Server) Queries() []*qdrant.QueryPoints {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*qdrant.QueryPoints, len(s.queries))
	for i, q := range s.queries {
		out[i] = proto.Clone(q).(*qdrant.QueryPoints)
	}
	return out
}

// collection returns the named collection or NotFound. The caller holds mu.
func (s *Server) collection(name string) (*collection, error) {
	c := s.cols[name]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

type healthService struct {
	qdrant.UnimplementedQdrantServer
}

func (healthService) HealthCheck(context.Context, *qdrant.HealthCheckRequest) (*qdrant.HealthCheckReply, error) {
	return &qdrant.HealthCheckReply{Title: "qdrant - fake (membus qdranttest)", Version: Version}, nil
}
