package recall

import (
	"context"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
)

// Neighbouring-turn context (issue 18). A message is read in its conversation: the answer to
// "what did Melanie paint?" is often the reply next to the turn that matches the question
// best, and shares few words with it. So a candidate scores at least neighbourWeight times the
// best candidate within neighbourWindow messages of its own in the same session. A memory is
// placed by the messages it is sourced at. Measured on the LoCoMo dev split
// (docs/recall-quality.md); the weight and window were picked by cross-validation over its
// conversations: 0.9 with all-MiniLM-L6-v2, 0.85 with e5-small-v2 and the question penalty
// (score.go; issue 18's fourth round: R@10 0.798–0.804 → 0.806–0.810, multi-hop 0.50 → 0.52).
const (
	neighbourWeight = 0.85
	neighbourWindow = 2
)

// turnPos is a message's place: its session and position in it.
type turnPos struct {
	session string
	seq     int64
}

// place is where a message was said: its seq in its session, and who said it (memory.Speaker;
// "" when the index predates the speaker in an archive point's payload).
type place struct {
	seq     int64
	speaker string
}

// messagePlaces places every message a candidate states: the archive candidates' own, and for
// a memory's messages that have none among the candidates, one SQL read. The read runs in the
// background while recall scores the candidates (it is needed only from the lift on, and is a
// tenth of a recall with an archive); wait returns the places. A failed read only leaves those
// memories unplaced (logged): recall never fails for the lift.
func (s *Service) messagePlaces(ctx context.Context, account string, cands []candidate) (wait func() map[store.Source]place) {
	pos := make(map[store.Source]place, len(cands))
	for i := range cands {
		if c := &cands[i]; c.kind == contract.KindArchive {
			pos[store.Source{SessionID: c.msg.session, MessageID: c.msg.messageID}] = place{c.msg.seq, c.msg.speaker}
		}
	}
	var missing []store.Source
	asked := make(map[store.Source]bool, len(cands))
	for i := range cands {
		for _, src := range cands[i].sources {
			if _, ok := pos[src]; !ok && !asked[src] {
				asked[src] = true
				missing = append(missing, src)
			}
		}
	}
	if len(missing) == 0 {
		return func() map[store.Source]place { return pos }
	}
	var places map[store.Source]store.MessagePlace
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		places, err = s.d.Store.MessagePlaces(ctx, account, missing)
	}()
	return func() map[store.Source]place {
		<-done
		if err != nil {
			s.log.Warn("read the places of memories' messages: the neighbouring-turn lift and the session context leave those memories out", "err", err)
			return pos
		}
		for src, p := range places {
			pos[src] = place{p.Seq, memory.Speaker(p.Role, p.Name)}
		}
		return pos
	}
}

// liftByNeighbours raises each candidate's score (before decay) to neighbourWeight × the best
// score within neighbourWindow messages of one of its messages, and adds the lift to its boost.
// pos places the messages (messagePlaces); a candidate none of whose messages it places is
// neither lifted nor lifts others.
func liftByNeighbours(cands []candidate, pos map[store.Source]place) {
	if len(pos) == 0 {
		return
	}
	places := make([][]turnPos, len(cands))
	best := map[turnPos]float64{}
	for i := range cands {
		for _, src := range cands[i].sources {
			at, ok := pos[src]
			if !ok {
				continue
			}
			p := turnPos{src.SessionID, at.seq}
			places[i] = append(places[i], p)
			best[p] = max(best[p], cands[i].score)
		}
	}
	for i := range cands {
		ctx := 0.0
		for _, p := range places[i] {
			for k := int64(-neighbourWindow); k <= neighbourWindow; k++ {
				if k != 0 {
					ctx = max(ctx, best[turnPos{p.session, p.seq + k}])
				}
			}
		}
		if lift := neighbourWeight*ctx - cands[i].score; lift > 0 {
			cands[i].parts.Boost += lift
			cands[i].score += lift
		}
	}
}
