package recall

import (
	"context"

	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// The session context (issue 18; pkg/projection ContextPoints). Each speaker of each archive
// has an index point, the mean of the vectors of what they said there. Recall searches those
// with the question (its best 2 × CandidatesPerSide by cosine, no keyword side: as many as a
// scope's two sides can bring candidates) and adds contextWeight × the scaled cosine of a
// candidate's speaker in its session, so a turn whose own words miss the question ("This is
// my book collection so far.") ranks by what its speaker talked about around it. Measured on
// LoCoMo's dev split (docs/recall-quality.md, the session-context round): the weight was
// picked in four of the five folds of a leave-one-conversation-out run over 0.05–0.3, and the
// best 24 contexts alone cost adversarial questions what the best 48 do not.
const contextWeight = 0.05

// speakerSession is one speaker in one session.
type speakerSession struct{ session, speaker string }

// sessionContexts returns the best scaled cosine of q with the session context of each
// speaker in each session among the user's best 2 × CandidatesPerSide. A failed search leaves
// recall without it (logged): the context refines the ranking, and failing it must not fail
// the recall.
func (s *Service) sessionContexts(ctx context.Context, account, user string, q []float32) map[speakerSession]float64 {
	f := vector.Filter{AccountID: account, UserID: user, Scopes: []string{projection.ScopeContext}}
	hits, err := s.d.Vectors.Search(ctx, f, q, "", 2*s.cfg.CandidatesPerSide)
	if err != nil {
		s.log.Warn("search the session contexts: ranking without them", "err", err)
		return nil
	}
	out := make(map[speakerSession]float64, len(hits))
	for _, h := range hits {
		k := speakerSession{h.Point.Payload["session_id"], h.Point.Payload["speaker"]}
		if k.session == "" || k.speaker == "" {
			continue
		}
		out[k] = max(out[k], clamp01(embed.ScaleCosine(s.d.Embedder, h.Dense)))
	}
	return out
}

// addSessionContext adds contextWeight × the best session context of a candidate's messages'
// speakers (places, messagePlaces) to its score, carried in its boost.
func addSessionContext(cands []candidate, places map[store.Source]place, contexts map[speakerSession]float64) {
	if len(contexts) == 0 {
		return
	}
	for i := range cands {
		c := &cands[i]
		best := 0.0
		for _, src := range c.sources {
			if p, ok := places[src]; ok && p.speaker != "" {
				best = max(best, contexts[speakerSession{src.SessionID, p.speaker}])
			}
		}
		c.parts.Boost += contextWeight * best
		c.score += contextWeight * best
	}
}
