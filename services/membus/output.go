package main

import (
	"encoding/json"
	"io"
)

// writeJSON prints v as indented JSON: what every --json of the CLI prints (a list command
// prints an array, [] when it is empty).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
