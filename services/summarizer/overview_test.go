package summarizer

import (
	"strings"
	"testing"

	"github.com/membus/membus/pkg/memory"
)

func TestOverviewIsCumulative(t *testing.T) {
	first := []memory.Message{
		{Role: "user", Name: "Ana", Text: "I want to migrate the billing service to Postgres. The config lives in deploy/billing.yaml."},
		{Role: "assistant", Text: "Sounds good, we decided to keep the old schema for now."},
		{Role: "user", Name: "Ana", Text: "Does the migration need downtime?"},
	}
	o := Parse("").Update(first)
	text := o.String()
	for _, want := range []string{"## Session Title", "migrate the billing service", "deploy/billing.yaml", "decided to keep the old schema", "## Open Issues", "downtime?"} {
		if !strings.Contains(text, want) {
			t.Fatalf("first overview lacks %q:\n%s", want, text)
		}
	}
	second := []memory.Message{
		{Role: "user", Name: "Ana", Text: "The import failed with a timeout error on the invoices table."},
		{Role: "assistant", Text: "We'll batch the invoices import in chunks of ten thousand rows."},
	}
	o2 := Parse(text).Update(second)
	text2 := o2.String()
	for _, want := range []string{"migrate the billing service", "deploy/billing.yaml", "decided to keep the old schema", "timeout error", "batch the invoices"} {
		if !strings.Contains(text2, want) {
			t.Fatalf("second overview lost or lacks %q:\n%s", want, text2)
		}
	}
	if len(o2.Abstract()) > 256 {
		t.Fatalf("abstract is %d chars", len(o2.Abstract()))
	}
}

func TestOverviewStaysUnderTheCap(t *testing.T) {
	o := Parse("")
	for i := 0; i < 200; i++ {
		o = o.Update([]memory.Message{{Role: "user", Text: strings.Repeat("We decided something important about item number ", 3) + string(rune('a'+i%26)) + "."}})
	}
	if n := len(o.String()); n > 4000 {
		t.Fatalf("overview is %d chars, over 4000", n)
	}
}
