package recall

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/membus/membus/pkg/contract"
)

// TestRecallTenancyRandomised: many tenants whose memories share words and even whole
// sentences; random queries for random tenants never return, trace or expose another tenant's
// memory or archived message. The seed is logged so a failure can be replayed.
func TestRecallTenancyRandomised(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	e := newEnv(t, false)
	words := []string{"hiking", "Alps", "sourdough", "coffee", "Lisbon", "guitar", "marathon", "Python", "garden", "piano", "sailing", "chess"}
	sentence := func() string {
		return fmt.Sprintf("I like %s and %s near %s.", words[rng.IntN(len(words))], words[rng.IntN(len(words))], words[rng.IntN(len(words))])
	}
	type tenant struct{ account, user string }
	owner := map[string]tenant{}
	var tenants []tenant
	for a := 0; a < 8; a++ {
		for u := 0; u < 3; u++ {
			tn := tenant{fmt.Sprintf("acct-%d", a), fmt.Sprintf("user-%d", u%2)} // user ids repeat across accounts
			if a%2 == 1 {
				tn.user = fmt.Sprintf("user-%d", u) // and accounts repeat user ids among themselves
			}
			dup := false
			for _, o := range tenants {
				dup = dup || o == tn
			}
			if dup {
				continue
			}
			tenants = append(tenants, tn)
			var fs []fact
			for i := 0; i < 4; i++ {
				f := fact{text: sentence()}
				if i == 0 {
					f.text = "I like hiking and coffee near Lisbon." // the same sentence in every tenant
				}
				if i == 3 {
					f.scope, f.agent = contract.ScopeAgent, "main"
				}
				fs = append(fs, f)
			}
			for _, id := range e.seed(tn.account, tn.user, fs...) {
				owner[id] = tn
			}
		}
	}
	for q := 0; q < 60; q++ {
		tn := tenants[rng.IntN(len(tenants))]
		query := fmt.Sprintf("what about %s and %s?", words[rng.IntN(len(words))], words[rng.IntN(len(words))])
		resp := e.recall(tn.account, contract.RecallRequest{UserID: tn.user, AgentID: "main", Query: query, Limit: 20, ScoreThreshold: zero(), Trace: true})
		for _, it := range resp.Items {
			if o, ok := owner[it.ID]; ok && o != tn {
				t.Fatalf("query %q by %v returned %s of %v", query, tn, it.ID, o)
			}
			if it.Kind == contract.KindArchive {
				// Archive items carry their message id as the source: seeded messages are per tenant.
				for _, src := range it.Sources {
					if !ownsMessage(e, tn.account, tn.user, src) {
						t.Fatalf("query %q by %v returned archived message %s of another tenant", query, tn, src)
					}
				}
			}
		}
		for _, tr := range resp.Trace {
			if o, ok := owner[tr.ID]; ok && o != tn {
				t.Fatalf("trace of %v names %s of %v", tn, tr.ID, o)
			}
		}
	}
}

func ownsMessage(e *env, account, user, messageID string) bool {
	var n int
	err := e.st.DB().QueryRowContext(e.ctx, `SELECT COUNT(*) FROM messages m JOIN sessions s ON s.account_id = m.account_id AND s.session_id = m.session_id
		WHERE m.account_id = ? AND s.user_id = ? AND m.message_id = ?`, account, user, messageID).Scan(&n)
	return err == nil && n > 0
}
