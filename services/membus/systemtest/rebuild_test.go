package systemtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

// TestVectorIndexRebuiltFromSQL: the local vector index is checked against SQL at start and
// rebuilt from it when it is missing — memories and archived messages alike — so recall after
// a lost index answers as before.
func TestVectorIndexRebuiltFromSQL(t *testing.T) {
	dir := t.TempDir()
	query := contract.RecallRequest{V: 1, UserID: "u1", Query: "Where does Caroline live?", Limit: 20}
	var before []string
	t.Run("first start", func(t *testing.T) {
		env, _ := startEmbedded(t, dir)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ev := turnEvent("acme", "u1", "s-1", "I live in Boston and I have a dog named Max.", "Nice!", "My sister Anna plays the cello.")
		if _, err := bus.PublishJSON(ctx, env.JS, env.Names.Turns("acme", "s-1"), ev.EventID, ev); err != nil {
			t.Fatal(err)
		}
		var res contract.CommitResult
		if err := bus.Call(ctx, env.NC, env.Names.RPC("acme", "commit"), contract.CommitRPCRequest{V: 1, RequestID: "r1", UserID: "u1", SessionID: "s-1", Kind: "compact", Wait: true}, &res); err != nil || res.Status != contract.StatusCompleted {
			t.Fatalf("commit: %+v %v", res, err)
		}
		var rec contract.RecallResponse
		if err := bus.Call(ctx, env.NC, env.Names.RPC("acme", "recall"), query, &rec); err != nil {
			t.Fatal(err)
		}
		kinds := map[string]bool{}
		for _, it := range rec.Items {
			before = append(before, it.ID)
			kinds[it.Kind] = true
		}
		if !kinds[contract.KindMemory] || !kinds[contract.KindArchive] {
			t.Fatalf("recall kinds %v, want memories and archived messages: %+v", kinds, rec.Items)
		}
	})
	if err := os.RemoveAll(filepath.Join(dir, "vectors")); err != nil {
		t.Fatal(err)
	}
	t.Run("restart without the index", func(t *testing.T) {
		env, _ := startEmbedded(t, dir)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var rec contract.RecallResponse
		if err := bus.Call(ctx, env.NC, env.Names.RPC("acme", "recall"), query, &rec); err != nil {
			t.Fatal(err)
		}
		var after []string
		for _, it := range rec.Items {
			after = append(after, it.ID)
		}
		if strings.Join(after, ",") != strings.Join(before, ",") {
			t.Fatalf("recall after the rebuild = %v, want the same items as before %v", after, before)
		}
	})
}
