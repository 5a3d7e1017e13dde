package recall

import (
	"testing"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
)

func archiveCand(id, session string, seq int64, score float64) candidate {
	msg := id + "-msg"
	return candidate{id: id, kind: contract.KindArchive, score: score, msg: archiveRef{session: session, messageID: msg, seq: seq},
		sources: []store.Source{{SessionID: session, MessageID: msg}}}
}

func memoryCand(id string, score float64, sources ...store.Source) candidate {
	return candidate{id: id, kind: contract.KindMemory, score: score, sources: sources}
}

func TestLiftByNeighbours(t *testing.T) {
	cases := []struct {
		name  string
		cands []candidate
		read  map[store.Source]int64 // places read from SQL for memories' messages
		want  map[string]float64     // id → score after the lift
	}{
		{"the reply next to the best turn rises to neighbourWeight of it",
			[]candidate{archiveCand("q", "s1", 5, 1.0), archiveCand("a", "s1", 6, 0.2)},
			nil, map[string]float64{"q": 1.0, "a": neighbourWeight}},
		{"two messages away still counts",
			[]candidate{archiveCand("q", "s1", 5, 1.0), archiveCand("a", "s1", 7, 0.2)},
			nil, map[string]float64{"a": neighbourWeight}},
		{"three messages away does not",
			[]candidate{archiveCand("q", "s1", 5, 1.0), archiveCand("a", "s1", 8, 0.2)},
			nil, map[string]float64{"a": 0.2}},
		{"another session's message is no neighbour",
			[]candidate{archiveCand("q", "s1", 5, 1.0), archiveCand("a", "s2", 6, 0.2)},
			nil, map[string]float64{"a": 0.2}},
		{"a candidate never falls",
			[]candidate{archiveCand("q", "s1", 5, 0.5), archiveCand("a", "s1", 6, 0.8)},
			nil, map[string]float64{"q": neighbourWeight * 0.8, "a": 0.8}},
		{"a memory is placed by its message's archive candidate",
			[]candidate{archiveCand("q", "s1", 5, 1.0), archiveCand("a", "s1", 6, 0.1), memoryCand("m", 0.3, store.Source{SessionID: "s1", MessageID: "a-msg"})},
			nil, map[string]float64{"m": neighbourWeight}},
		{"a memory lifts the archive messages around it",
			[]candidate{archiveCand("x", "s1", 4, 0.1), archiveCand("a", "s1", 6, 0.1), memoryCand("m", 1.0, store.Source{SessionID: "s1", MessageID: "a-msg"})},
			nil, map[string]float64{"x": neighbourWeight}},
		{"a memory whose message SQL does not place stays put",
			[]candidate{archiveCand("q", "s1", 5, 1.0), memoryCand("m", 0.3, store.Source{SessionID: "s1", MessageID: "elsewhere"})},
			nil, map[string]float64{"m": 0.3}},
		{"a memory placed by SQL is lifted by the archive candidate next to its message",
			[]candidate{archiveCand("q", "s1", 5, 1.0), memoryCand("m", 0.3, store.Source{SessionID: "s1", MessageID: "elsewhere"})},
			map[store.Source]int64{{SessionID: "s1", MessageID: "elsewhere"}: 4}, map[string]float64{"m": neighbourWeight}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := map[string]float64{}
			for _, cd := range c.cands {
				before[cd.id] = cd.score
			}
			pos := map[store.Source]place{}
			for _, cd := range c.cands {
				if cd.kind == contract.KindArchive {
					pos[cd.sources[0]] = place{seq: cd.msg.seq}
				}
			}
			for src, seq := range c.read {
				pos[src] = place{seq: seq}
			}
			liftByNeighbours(c.cands, pos)
			for _, cd := range c.cands {
				if want, ok := c.want[cd.id]; ok && !near(cd.score, want) {
					t.Errorf("%s: score %v, want %v", cd.id, cd.score, want)
				}
				if !near(cd.parts.Boost, cd.score-before[cd.id]) {
					t.Errorf("%s: boost %v does not carry the lift %v", cd.id, cd.parts.Boost, cd.score-before[cd.id])
				}
			}
		})
	}
}

// TestRecallReadsTheSessionContext, through the local index and SQL: the same vague turn said
// in two sessions ranks higher where its speaker talked about what the question asks, by at
// most contextWeight; with the hash embedder (not a learned model) it gains nothing.
func TestRecallReadsTheSessionContext(t *testing.T) {
	e := newEnv(t, false)
	session := func(id, topic string) []store.Message {
		_, msgs := e.archiveSession("acme", "alice", id,
			named("Caroline", topic),
			named("Melanie", "Right."), named("Melanie", "Right."), named("Melanie", "Right."),
			named("Caroline", "This is my collection so far."),
			named("Melanie", "Right."), named("Melanie", "Right."))
		return msgs
	}
	books := session("s1", "I keep reading fantasy novels, Tolkien and Le Guin mostly.")
	cooking := session("s2", "I keep cooking pasta, carbonara and pesto mostly.")
	query := "Which novels has Caroline been reading?"
	for _, tc := range []struct {
		name    string
		learned bool
	}{{"a learned model", true}, {"the hash embedder", false}} {
		t.Run(tc.name, func(t *testing.T) {
			emb := e.emb
			if tc.learned {
				emb = &recordingEmbedder{Embedder: e.emb} // hides the hash embedder's provider
			}
			score := e.traceScores(emb, "alice", query)
			vague := func(msgs []store.Message) float64 {
				s, ok := score[memory.ArchiveMessageID("acme", msgs[4].SessionID, msgs[4].MessageID)]
				if !ok {
					t.Fatalf("the vague turn of %s is not in the trace %v", msgs[4].SessionID, score)
				}
				return s
			}
			got := vague(books) - vague(cooking)
			if tc.learned && !(got > 0 && got <= contextWeight) {
				t.Fatalf("the vague turn among the books scores %v above the one among the cooking, want more than 0 and at most %v", got, contextWeight)
			}
			if !tc.learned && got != 0 {
				t.Fatalf("the hash embedder: the vague turns differ by %v, want 0", got)
			}
		})
	}
}

// traceScores recalls query for account acme's user with a service on e's stores and emb,
// every candidate traced (threshold 0, limit 20), and returns each traced candidate's score.
func (e *env) traceScores(emb embed.Embedder, user, query string) map[string]float64 {
	e.t.Helper()
	score := map[string]float64{}
	for id, tr := range e.traceWith(Defaults(), emb, user, query) {
		score[id] = tr.Score
	}
	return score
}

// traceWith is each candidate's trace entry, by id, of a recall with config cfg and emb.
func (e *env) traceWith(cfg Config, emb embed.Embedder, user, query string) map[string]contract.TraceEntry {
	e.t.Helper()
	svc, err := New(cfg, Deps{NC: e.svc.d.NC, Names: e.names, Store: e.st, Embedder: emb, Vectors: e.vec, Metrics: e.svc.d.Metrics})
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := svc.Recall(e.ctx, "acme", contract.RecallRequest{UserID: user, Query: query, Trace: true, Limit: 20, ScoreThreshold: zero()})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]contract.TraceEntry{}
	for _, tr := range resp.Trace {
		out[tr.ID] = tr
	}
	return out
}
