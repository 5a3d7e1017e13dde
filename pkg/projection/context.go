package projection

import (
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/vector"
)

// The session context (issue 18). A turn is read in its conversation, and what its speaker
// said around it tells what it is about when its own words do not: "This is my book
// collection so far." among a session's turns about reading. So each speaker of an archive
// gets one index point, the mean of the vectors of their messages in it, in a scope no request
// can name (contract.ValidScope) and no item comes from. Recall searches that scope with the
// query and adds a little of the best cosine to every candidate its speaker said in that
// session (services/recall/context.go). Measured on LoCoMo's dev split
// (docs/recall-quality.md, issue 18's session-context round).
const (
	ScopeContext = "context"
	KindContext  = "context"
)

// ContextPoints are the session-context points of archive points pts (ArchivePoints, in any
// order): one per speaker of each archive, id memory.ContextID, the speaker's role as its
// category, no text, and as its vector the unit mean of that speaker's points' vectors (nil
// when one of them has none: Reconcile compares ids before it embeds). The payload names the
// session, archive and speaker.
func ContextPoints(pts []vector.Point) []vector.Point {
	type key struct{ account, user, session, archive, speaker string }
	var out []vector.Point
	var members [][]int
	at := map[key]int{}
	for n, p := range pts {
		k := key{p.AccountID, p.UserID, p.Payload["session_id"], p.Payload["archive_id"], p.Payload["speaker"]}
		if k.speaker == "" {
			continue
		}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, vector.Point{
				ID: memory.ContextID(k.account, k.session, k.archive, k.speaker), AccountID: k.account, UserID: k.user, AgentID: p.AgentID,
				Scope: ScopeContext, Kind: KindContext, Category: p.Category, CreatedAt: p.CreatedAt,
				Payload: map[string]string{"session_id": k.session, "archive_id": k.archive, "speaker": k.speaker},
			})
			members = append(members, nil)
		}
		members[i] = append(members[i], n)
	}
	for i, ms := range members {
		out[i].Vector = meanVector(pts, ms)
	}
	return out
}

// meanVector is the unit mean of the vectors of pts[ms], nil when one is missing or their
// dimensions differ.
func meanVector(pts []vector.Point, ms []int) []float32 {
	dim := len(pts[ms[0]].Vector)
	sum := make([]float32, dim)
	for _, m := range ms {
		v := pts[m].Vector
		if dim == 0 || len(v) != dim {
			return nil
		}
		for j, x := range v {
			sum[j] += x
		}
	}
	embed.Normalize(sum)
	return sum
}
