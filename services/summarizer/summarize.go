package summarizer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
)

// Summarizer writes the cumulative session overview and the period digests. Two implement
// it: Extractive (default, no network) and LLM (an OpenAI-compatible endpoint, falling back
// to Extractive and saying so).
type Summarizer interface {
	// UpdateOverview folds one archive's messages into the previous overview (text written by
	// an earlier call, "" for the first archive).
	UpdateOverview(ctx context.Context, prev string, msgs []memory.Message) (Summary, error)
	// Digest writes the digest of one user's (or agent's) period.
	Digest(ctx context.Context, in DigestInput) (Summary, error)
	Name() string
}

// Summary is what a summarizer produced and which one did (By: "extractive", "llm").
type Summary struct {
	Text     string // overview ≤ 4000 chars, or digest ≤ 4000 chars
	Abstract string // ≤ 256 chars
	By       string
	Fallback string // the fallback reason when the LLM summarizer handed over, else ""
}

// DigestInput is what a digest is built from: the period's memories and archive abstracts.
type DigestInput struct {
	Owner    store.DigestOwner
	Period   string // day | week | month
	Bucket   string
	Start    time.Time
	End      time.Time
	Memories []store.Memory
	Archives []store.Archive
}

// Extractive is the default summarizer: sentence rules for the overview (see Overview.Update)
// and category-grouped memories for digests; no network.
type Extractive struct{}

// Name implements Summarizer.
func (Extractive) Name() string { return "extractive" }

// UpdateOverview implements Summarizer.
func (Extractive) UpdateOverview(_ context.Context, prev string, msgs []memory.Message) (Summary, error) {
	o := Parse(prev).Update(msgs)
	text := o.String()
	return Summary{Text: text, Abstract: o.Abstract(), By: "extractive"}, nil
}

const maxDigest = 4000

// digestHeadings names the sections of a digest, in order.
var digestHeadings = []struct{ category, heading string }{
	{memory.Profile, "Profile"}, {memory.Preference, "Preferences"}, {memory.Entity, "People & things"},
	{memory.Event, "Events"}, {memory.Decision, "Decisions"}, {memory.Task, "Tasks"}, {memory.Fact, "Facts"},
	{memory.Case, "Cases"}, {memory.Pattern, "Patterns"},
}

// Digest implements Summarizer: the sessions' abstracts, then the period's memories grouped by
// category (most important first, near-duplicates dropped), cut to 4000 chars.
func (Extractive) Digest(_ context.Context, in DigestInput) (Summary, error) {
	var b strings.Builder
	who := in.Owner.UserID
	if in.Owner.AgentID != "" {
		who = "agent " + in.Owner.AgentID + " with " + in.Owner.UserID
	}
	title := fmt.Sprintf("%s digest %s (%s)", strings.ToUpper(in.Period[:1])+in.Period[1:], in.Bucket, who)
	b.WriteString("# " + title + "\n")
	var seen []string
	fresh := func(text string) bool {
		n := memory.Normalize(text)
		for _, s := range seen {
			if s == n || memory.Jaccard(s, n) >= memory.JaccardDuplicate {
				return false
			}
		}
		seen = append(seen, n)
		return true
	}
	if len(in.Archives) > 0 {
		b.WriteString("## Sessions\n")
		for _, a := range in.Archives {
			if fresh(a.Abstract) {
				b.WriteString("- " + a.Abstract + "\n")
			}
		}
	}
	var first string
	for _, h := range digestHeadings {
		var items []string
		for _, m := range in.Memories {
			if m.Category == h.category && fresh(m.Text) {
				items = append(items, cap(m.Text))
			}
		}
		if len(items) == 0 {
			continue
		}
		if first == "" {
			first = items[0]
		}
		b.WriteString("## " + h.heading + "\n")
		for _, it := range items {
			b.WriteString("- " + it + "\n")
		}
	}
	text := strings.TrimSpace(b.String())
	if r := []rune(text); len(r) > maxDigest {
		text = string(r[:maxDigest-1]) + "…"
		if i := strings.LastIndexByte(text, '\n'); i > maxDigest/2 {
			text = text[:i]
		}
	}
	abstract := title
	if first != "" {
		abstract += ": " + first
	} else if len(in.Archives) > 0 {
		abstract += ": " + in.Archives[0].Abstract
	}
	return Summary{Text: text, Abstract: memory.Abstract(abstract), By: "extractive"}, nil
}
