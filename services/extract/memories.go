package extract

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/store"
)

// Reasons of the conflict and dedup decisions (the reason label of
// extract_memory_decisions_total, and the log's reason attribute).
const (
	reasonNew             = "new"                 // no conflict, no duplicate: a new memory
	reasonSameID          = "same_id"             // the same slot and value (or the same event day): one row
	reasonValueChanged    = "value_changed"       // conflict: same subject and attribute, new value
	reasonPolarityFlipped = "polarity_flipped"    // conflict: same subject, attribute and value, opposite polarity
	reasonExact           = memory.DupExact       // dedup: same normalised text
	reasonContainment     = memory.DupContainment // dedup: one text contains the other
	reasonJaccard         = memory.DupJaccard     // dedup: token Jaccard ≥ 0.7
	reasonLevenshtein     = memory.DupLevenshtein // dedup: Levenshtein similarity ≥ 0.8
	reasonCosine          = memory.DupCosine      // dedup: dense cosine ≥ 0.92
	reasonSameFact        = memory.DupSameFact    // dedup: the same slot and value, or the same content words, in any category
)

// extract turns an archived range into memory rows (state extracted). Conflicts are resolved
// first, then duplicates, against the user's rows in SQL under the merge lock.
func (s *Service) extract(ctx context.Context, epoch int64, a store.Archive) error {
	msgs, err := s.d.Store.ArchiveMessages(ctx, a)
	if err != nil {
		return err
	}
	in := make([]memory.Message, 0, len(msgs))
	for _, m := range msgs {
		in = append(in, memory.Message{ID: m.MessageID, Role: m.Role, Name: m.Name, Text: m.Content, CreatedAt: m.CreatedAt})
	}
	cands, err := s.d.Extractor.Extract(ctx, in)
	if err != nil {
		return fmt.Errorf("%s extractor: %w", s.d.Extractor.Name(), err)
	}
	texts := make([]string, len(cands))
	for i, c := range cands {
		texts[i] = c.Text
	}
	vecs, err := s.d.Embedder.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}

	merge, err := s.d.Locker.Acquire(ctx, lock.MergeKey(a.AccountID, a.UserID), lock.MergeTTL)
	if err != nil {
		return err
	}
	defer lock.Release(context.WithoutCancel(ctx), merge, s.log)

	existing, err := s.d.Store.Memories(ctx, store.MemoryFilter{AccountID: a.AccountID, UserID: a.UserID, ActiveOnly: true})
	if err != nil {
		return err
	}
	decisions := s.d.Metrics.CounterVec("extract_memory_decisions_total", "Conflict and dedup decisions per extracted candidate, by decision and reason.", "decision", "reason")
	decide := func(decision, reason string, c store.Memory, other string) {
		decisions.WithLabelValues(decision, reason).Inc()
		s.log.Info("memory "+decision, "decision", decision, "reason", reason, "account", a.AccountID, "user", a.UserID,
			"archive", a.ID, "memory", c.ID, "other", other, "category", c.Category)
	}
	now := s.d.Now().UTC()
	byID := map[string]int{} // memory id → index in out
	var out []store.Memory
	supersede := map[string]string{}
	var dedups int
	for i, c := range cands {
		agent := ""
		if c.Scope == contract.ScopeAgent {
			agent = a.AgentID
		}
		m := store.Memory{
			ID: memory.ID(a.AccountID, a.UserID, agent, c), AccountID: a.AccountID, UserID: a.UserID, AgentID: a.AgentID,
			Scope: c.Scope, Category: c.Category, Subject: c.Subject, Attribute: c.Attribute, Polarity: c.Polarity,
			Value: c.Value, Abstract: c.Abstract, Text: c.Text, Importance: c.Importance, EventTime: c.EventTime,
			ValidFrom: now, ContentHash: memory.ContentHash(c.Text), Embedding: vecs[i], EmbedModel: s.d.Embedder.Model(),
		}
		if agent == "" {
			m.AgentID = ""
		}
		for _, src := range c.Sources {
			m.Sources = append(m.Sources, store.Source{SessionID: a.SessionID, MessageID: src})
		}
		if j, ok := byID[m.ID]; ok { // the same fact twice in one archive
			out[j].Sources = append(out[j].Sources, m.Sources...)
			decide("merged", reasonSameID, m, m.ID)
			continue
		}
		if old, reason, ok := conflicting(current(out, existing, supersede), m); ok {
			// Conflicts first: a changed fact is never swallowed as a near-duplicate.
			supersede[old.ID] = m.ID
			decide("superseded", reason, m, old.ID)
		} else if dup, reason, ok := duplicate(current(out, existing, supersede), m, embed.DuplicateCosine(s.d.Embedder, 0)); ok {
			// A dedup hit unions the sources into the memory already stated — in this archive
			// or before — instead of dropping them.
			dedups++
			decide("merged", reason, m, dup.ID)
			if j, ok := byID[dup.ID]; ok {
				out[j].Sources = append(out[j].Sources, m.Sources...)
				continue
			}
			m = dup
			m.Sources = append([]store.Source(nil), mSources(c, a)...)
		} else {
			decide("created", reasonNew, m, "")
		}
		byID[m.ID] = len(out)
		out = append(out, m)
	}
	var events []store.OutboxEntry
	for _, m := range out {
		events = append(events, s.event(contract.Event{
			EventID: eventID(contract.EventMemoryUpserted, m.ID, a.ID), Kind: contract.EventMemoryUpserted,
			AccountID: a.AccountID, UserID: a.UserID, AgentID: m.AgentID, SessionID: a.SessionID, MemoryID: m.ID, Category: m.Category,
		}))
	}
	for oldID, newID := range supersede {
		events = append(events, s.event(contract.Event{
			EventID: eventID(contract.EventMemorySuperseded, oldID, newID), Kind: contract.EventMemorySuperseded,
			AccountID: a.AccountID, UserID: a.UserID, SessionID: a.SessionID, MemoryID: oldID, SupersededBy: newID,
		}))
	}
	a.Abstract = archiveAbstract(msgs, out)
	if err := s.d.Store.SaveMemories(ctx, epoch, a, out, supersede, events); err != nil {
		return err
	}
	s.memoriesWritten(float64(len(out)))
	s.superseded(float64(len(supersede)))
	s.deduped(float64(dedups))
	s.d.KickOutbox()
	return nil
}

// current is what is active as this candidate is judged: this archive's earlier candidates
// (newest first), then the user's rows not already superseded by them. "I live in Boston. I
// moved to Denver." in one archive leaves Denver active and Boston superseded.
func current(out, existing []store.Memory, supersede map[string]string) []store.Memory {
	cur := make([]store.Memory, 0, len(out)+len(existing))
	for i := len(out) - 1; i >= 0; i-- {
		if _, gone := supersede[out[i].ID]; !gone {
			cur = append(cur, out[i])
		}
	}
	for _, e := range existing {
		if _, gone := supersede[e.ID]; !gone {
			cur = append(cur, e)
		}
	}
	return cur
}

func mSources(c memory.Candidate, a store.Archive) []store.Source {
	out := make([]store.Source, 0, len(c.Sources))
	for _, src := range c.Sources {
		out = append(out, store.Source{SessionID: a.SessionID, MessageID: src})
	}
	return out
}

// conflicting finds an active memory in the same slot (subject + attribute, in canonical
// words: memory.SameSlot) whose value or polarity differs, in any category: "lives in Boston" →
// "moved to Denver" (value_changed), "my favorite color is blue" → "green is my favourite
// colour" (value_changed), "likes coffee" → "doesn't like coffee anymore" (polarity_flipped).
func conflicting(existing []store.Memory, m store.Memory) (store.Memory, string, bool) {
	if m.Attribute == "" {
		return store.Memory{}, "", false
	}
	mc := comparable(m)
	for _, e := range existing {
		if e.ID == m.ID || e.Scope != m.Scope || !memory.SameSlot(comparable(e), mc) {
			continue
		}
		if memory.FactPhrase(e.Value) != memory.FactPhrase(m.Value) {
			return e, reasonValueChanged, true
		}
		if e.Polarity != m.Polarity {
			return e, reasonPolarityFlipped, true
		}
	}
	return store.Memory{}, "", false
}

// duplicate finds an active memory that says the same thing — the same id, or a near-duplicate
// by memory.NearDuplicate (exact normalised text or the same fact in any category; between
// memories without a slot, containment, token Jaccard ≥ 0.7, Levenshtein similarity ≥ 0.8 or
// dense cosine ≥ 0.92 unless each names a value the other lacks) — and says which check matched.
// Two memories that fill different slots (or the same slot with different values) are never
// near-duplicates, however similar their words: "likes cats" is not "likes bats".
func duplicate(existing []store.Memory, m store.Memory, dupCos float64) (store.Memory, string, bool) {
	mc := comparable(m)
	mc.DupCosine = dupCos // the embedding model's threshold (0: the rules' own)
	for _, e := range existing {
		if e.ID == m.ID {
			return e, reasonSameID, true
		}
		if reason, ok := memory.NearDuplicate(comparable(e), mc); ok {
			return e, reason, true
		}
	}
	return store.Memory{}, "", false
}

// comparable is what the near-duplicate rules look at of a memory row.
func comparable(m store.Memory) memory.Comparable {
	return memory.Comparable{Scope: m.Scope, Category: m.Category, Subject: m.Subject, Attribute: m.Attribute, Value: m.Value,
		Polarity: m.Polarity, Text: m.Text, ContentHash: m.ContentHash, Embedding: m.Embedding,
		EventDay: memory.EventDay(m.Category, m.EventTime)}
}

// The shared near-duplicate rule the tests probe (pkg/memory owns it).
const levenshteinDuplicate = memory.LevenshteinDuplicate

func levenshteinSimilarity(a, b string) float64 { return memory.LevenshteinSimilarity(a, b) }

// index writes the archive's memories to the vector store, drops what they superseded, and
// completes the commit (state indexed, commit_completed).
func (s *Service) index(ctx context.Context, epoch int64, a store.Archive) error {
	if err := projection.IndexArchive(ctx, projection.Deps{Store: s.d.Store, Embedder: s.d.Embedder, Vectors: s.d.Vectors}, a); err != nil {
		return err
	}
	sess, err := s.d.Store.GetSession(ctx, a.AccountID, a.SessionID)
	if err != nil {
		return err
	}
	counts := a.Memories
	if counts == nil {
		counts = map[string]int{}
	}
	ev := contract.Event{
		EventID: eventID(contract.EventCommitCompleted, a.RequestID, a.ID), Kind: contract.EventCommitCompleted,
		AccountID: a.AccountID, UserID: a.UserID, AgentID: a.AgentID, SessionID: a.SessionID, RequestID: a.RequestID,
		ArchiveID: a.ID, FromSeq: a.FromSeq, ToSeq: a.ToSeq, Status: contract.StatusCompleted, Memories: counts,
		TokensBefore: int(sess.PendingTokens + a.Tokens), TokensAfter: int(sess.PendingTokens),
	}
	if err := s.d.Store.AdvanceArchive(ctx, epoch, a, store.StateExtracted, store.StateIndexed, []store.OutboxEntry{s.event(ev)}); err != nil {
		return err
	}
	s.d.KickOutbox()
	s.completed.notify(ev)
	return nil
}

// archiveAbstract is the one-line abstract a commit answers with (≤ 256 chars): what the
// archive taught, most important memories first, else what the user said.
func archiveAbstract(msgs []store.Message, mems []store.Memory) string {
	byImportance := slices.Clone(mems)
	slices.SortStableFunc(byImportance, func(x, y store.Memory) int { return cmp.Compare(y.Importance, x.Importance) })
	var parts []string
	for _, m := range byImportance {
		if len(parts) == 3 {
			break
		}
		parts = append(parts, sentence(m.Text))
	}
	if len(parts) == 0 {
		for _, m := range msgs {
			if m.Role == "user" && strings.TrimSpace(m.Content) != "" && len(parts) < 3 {
				parts = append(parts, sentence(m.Content))
			}
		}
		if len(parts) > 0 {
			return memory.Abstract("The user said: " + strings.Join(parts, " "))
		}
		if len(msgs) == 1 {
			return "1 archived message."
		}
		return fmt.Sprintf("%d archived messages.", len(msgs))
	}
	return memory.Abstract(strings.Join(parts, " "))
}

// sentence is text on one line, ending with a full stop unless it ends with punctuation.
func sentence(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" || strings.ContainsRune(".!?…", []rune(text)[len([]rune(text))-1]) {
		return text
	}
	return text + "."
}
