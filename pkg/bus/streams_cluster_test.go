package bus_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
)

// freePorts reserves n loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return ports
}

// TestEnsureStreamsWaitsForAYoungCluster: a service that starts while its 3-node cluster has
// no JetStream leader yet (one node up, the other two seconds behind) creates its R3 streams
// once the cluster forms, instead of failing its start (a deploy's services start together).
func TestEnsureStreamsWaitsForAYoungCluster(t *testing.T) {
	client, routes := freePorts(t, 3), freePorts(t, 3)
	var nodes []*server.Server
	for i := range 3 {
		var rs []*url.URL
		for j, p := range routes {
			if j != i {
				rs = append(rs, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
			}
		}
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: client[i], JetStream: true, StoreDir: t.TempDir(),
			Cluster: server.ClusterOpts{Name: "young", Host: "127.0.0.1", Port: routes[i]}, Routes: rs, NoSigs: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		nodes = append(nodes, s)
	}
	nodes[0].Start()
	if !nodes[0].ReadyForConnections(10 * time.Second) {
		t.Fatal("the first node is not ready")
	}
	nc, err := nats.Connect(nodes[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	go func() { // the rest of the cluster, a little later
		time.Sleep(1500 * time.Millisecond)
		nodes[1].Start()
		nodes[2].Start()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lim := bus.DefaultStreamLimits()
	lim.Replicas = 3
	t0 := time.Now()
	if err := bus.EnsureStreams(ctx, js, bus.Names{Prefix: "young"}, lim); err != nil {
		t.Fatalf("EnsureStreams on a young cluster: %v", err)
	}
	t.Logf("streams created %s after the first node", time.Since(t0).Round(time.Millisecond))
}
