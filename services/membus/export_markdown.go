package main

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
)

// sourceLink is the link of one source message: membus://<account>/sessions/<session>/messages/<message>.
// A URI rather than a gateway URL: the export does not know which address (if any) the reader
// reaches the gateway at, a gateway route needs an API key the file must not carry, and the
// gateway has no route for one message. The URI names the message exactly and stays true
// wherever the file travels.
func sourceLink(account string, s contract.MemorySource) string {
	return "membus://" + url.PathEscape(account) + "/sessions/" + url.PathEscape(s.SessionID) + "/messages/" + url.PathEscape(s.MessageID)
}

// writeMarkdown writes recs as a Markdown document to read and edit: a heading per category
// (in memory.Categories order, then any other alphabetically), one bullet per memory, oldest
// first, with its event day, its agent (agent-scoped memories) and its sources as links.
func writeMarkdown(w io.Writer, account, user string, recs []contract.MemoryRecord, now time.Time) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Memories of %s (account %s)\n\n", mdText(user), mdText(account))
	fmt.Fprintf(bw, "%d memories, exported %s. The JSON Lines export (`membus export --format jsonl`) is the one\n", len(recs), now.UTC().Format(time.RFC3339))
	fmt.Fprintf(bw, "`membus import` reads; this file is for people. A source link names the message a memory was\n")
	fmt.Fprintf(bw, "stated in: `membus://<account>/sessions/<session>/messages/<message>`.\n")

	byCat := map[string][]contract.MemoryRecord{}
	for _, r := range recs {
		byCat[r.Category] = append(byCat[r.Category], r)
	}
	var cats []string
	for _, c := range memory.Categories {
		if len(byCat[c]) > 0 {
			cats = append(cats, c)
		}
	}
	var others []string
	for c := range byCat {
		if !slices.Contains(memory.Categories, c) {
			others = append(others, c)
		}
	}
	slices.Sort(others)
	for _, c := range append(cats, others...) {
		rs := byCat[c]
		slices.SortStableFunc(rs, func(a, b contract.MemoryRecord) int {
			if d := a.CreatedAt.Compare(b.CreatedAt); d != 0 {
				return d
			}
			return strings.Compare(a.ID, b.ID)
		})
		fmt.Fprintf(bw, "\n## %s (%d)\n\n", title(c), len(rs))
		for _, r := range rs {
			fmt.Fprintf(bw, "- %s", mdText(r.Text))
			var notes []string
			if r.EventTime != nil {
				notes = append(notes, "event "+r.EventTime.UTC().Format("2006-01-02"))
			}
			if r.Scope == contract.ScopeAgent {
				notes = append(notes, "agent "+mdText(r.AgentID))
			}
			if len(notes) > 0 {
				fmt.Fprintf(bw, " *(%s)*", strings.Join(notes, ", "))
			}
			if len(r.Sources) > 0 {
				links := make([]string, 0, len(r.Sources))
				for _, s := range r.Sources {
					links = append(links, fmt.Sprintf("[%s/%s](%s)", mdText(s.SessionID), mdText(s.MessageID), sourceLink(account, s)))
				}
				fmt.Fprintf(bw, " — %s", strings.Join(links, ", "))
			}
			fmt.Fprintln(bw)
		}
	}
	return bw.Flush()
}

// title is a category as a heading: "profile" → "Profile".
func title(c string) string {
	if c == "" {
		return "(none)"
	}
	r := []rune(c)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// mdEscaper escapes what Markdown would read as markup inside a bullet's text.
var mdEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "#", `\#`)

// mdText is text on one line with its Markdown markup escaped, so a memory reads as written
// and cannot break the list (a newline would end the bullet).
func mdText(s string) string {
	return mdEscaper.Replace(strings.Join(strings.Fields(s), " "))
}
