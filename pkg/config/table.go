package config

import (
	"fmt"
	"strings"
)

// Markers around the README's configuration table, which MarkdownTable generates.
const (
	TableBegin = "<!-- configuration table: generated from pkg/config (go test ./pkg/config -run TestREADMETable -update); do not edit -->"
	TableEnd   = "<!-- end of the configuration table -->"
)

// MarkdownTable is the README's configuration table: one row per key, in the order of the
// keys' definitions, with the default of Defaults (or the key's own wording when the default is
// computed or generated).
func MarkdownTable() string {
	d := Defaults()
	var b strings.Builder
	b.WriteString("| Variable | Flag | Default | Meaning |\n|---|---|---|---|\n")
	for _, f := range d.fields() {
		def := f.def
		if def == "" {
			switch v := f.String(); v {
			case "":
				def = "—"
			default:
				def = "`" + v + "`"
			}
		}
		doc := f.doc
		if doc == "" {
			doc = f.help
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s |\n", f.env(), f.flag(), def, strings.ReplaceAll(doc, "|", `\|`))
	}
	return b.String()
}
