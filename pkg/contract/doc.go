// Package contract holds the Go types of every payload that crosses the bus. The JSON Schemas
// in schemas/ are the truth; schema_test.go validates every example against its schema and
// round-trips it through these types so the two cannot drift.
//
// Every payload carries "v": 1. Decoders ignore unknown fields (encoding/json's default).
package contract

// Version is the payload version every publisher writes in "v".
const Version = 1
