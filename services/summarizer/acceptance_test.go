package summarizer

import (
	"strings"
	"testing"

	"github.com/membus/membus/pkg/store"
)

// Issue 6 acceptance: three archives of one session.
var (
	accFirst = []string{
		"I want to migrate the billing service to Postgres this quarter.",
		"Good plan, we decided to keep the old schema during the move.",
		"The database port is 5432 and the config lives in deploy/billing.yaml.",
		"Noted the port and the config file deploy/billing.yaml.",
		"Does the migration need downtime for the invoices table?",
		"Let me check.",
	}
	accSecond = []string{
		"The import failed with a timeout error on the invoices table.",
		"We'll batch the invoices import in chunks of ten thousand rows.",
		"Dana owns the replica setup for the reporting cluster.",
		"Understood, Dana owns the replica setup.",
	}
	accThird = []string{
		"Actually, the database port is 6432.",
		"Thanks, I updated the port in the connection settings.",
		"The downtime question for the invoices migration is resolved: we run it online.",
		"Great, no downtime then; the online migration works for the invoices table.",
	}
)

// section returns the bullets of one overview section.
func section(overview, name string) string {
	return strings.Join(Parse(overview)[name], "\n")
}

func checkAcceptance(t *testing.T, overview string) {
	t.Helper()
	for _, want := range []string{"migrate the billing service", "deploy/billing.yaml", "keep the old schema", "batch the invoices", "Dana owns the replica"} {
		if !strings.Contains(overview, want) {
			t.Errorf("overview after the third archive lost the key fact %q:\n%s", want, overview)
		}
	}
	facts := section(overview, "Key Facts & Decisions")
	if !strings.Contains(facts, "6432") || strings.Contains(facts, "port is 5432") {
		t.Errorf("the corrected port is not stated corrected in Key Facts:\n%s", facts)
	}
	if !strings.Contains(section(overview, "Errors & Corrections"), "6432") {
		t.Errorf("the correction is not noted under Errors & Corrections:\n%s", overview)
	}
	if strings.Contains(section(overview, "Open Issues"), "downtime") {
		t.Errorf("the resolved downtime question is still open:\n%s", overview)
	}
}

func TestThreeArchivesKeepFactsCorrectAndResolve(t *testing.T) {
	deliveries := []struct {
		name  string
		order []int // indexes of the three archives, in delivery order, after all exist
	}{
		{"in order", []int{0, 1, 2}},
		{"reverse order", []int{2, 1, 0}},
		{"every event twice, reversed", []int{2, 2, 1, 0, 1, 0}},
	}
	var results []string
	for _, d := range deliveries {
		t.Run(d.name, func(t *testing.T) {
			e := newEnv(t)
			e.say(accFirst...)
			as := []store.Archive{e.archive(1, 6)}
			e.say(accSecond...)
			as = append(as, e.archive(7, 10))
			e.say(accThird...)
			as = append(as, e.archive(11, 14))
			for _, i := range d.order {
				if err := e.deliver(as[i]); err != nil {
					t.Fatal(err)
				}
			}
			sess := e.session()
			if sess.SummarizedUpto != 14 {
				t.Fatalf("summarized_upto %d, want 14", sess.SummarizedUpto)
			}
			checkAcceptance(t, sess.Overview)
			if n := e.summaryEvents(); n != 3 {
				t.Errorf("%d summary_created events, want one per archive (3)", n)
			}
			results = append(results, sess.Overview)
		})
	}
	for i := 1; i < len(results); i++ {
		if results[i] != results[0] {
			t.Errorf("delivery %q gave another overview than %q:\n%s\n---\n%s", deliveries[i].name, deliveries[0].name, results[i], results[0])
		}
	}
}

// The overview after the first archive holds what the third must keep or change (so the
// acceptance test above cannot pass by never having had it).
func TestFirstArchiveOverviewHasWhatTheThirdChanges(t *testing.T) {
	e := newEnv(t)
	e.say(accFirst...)
	if err := e.deliver(e.archive(1, 6)); err != nil {
		t.Fatal(err)
	}
	ov := e.session().Overview
	if !strings.Contains(section(ov, "Key Facts & Decisions"), "port is 5432") {
		t.Errorf("first overview lacks the port fact:\n%s", ov)
	}
	if !strings.Contains(section(ov, "Open Issues"), "downtime") {
		t.Errorf("first overview lacks the open downtime question:\n%s", ov)
	}
}
