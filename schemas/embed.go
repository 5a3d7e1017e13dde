// Package schemas ships the contracts that are not Go code: the JSON Schemas of every bus
// payload (with their examples), the OpenAPI document of the HTTP API and the SQL migrations.
// It is a module of its own so every other module embeds the same files.
package schemas

import "embed"

// JSON holds the JSON Schemas (*.schema.json) and examples/ (one folder per schema name).
//
//go:embed *.schema.json examples
var JSON embed.FS

// SQL holds the versioned migrations, sql/mysql/NNN_name.sql and sql/sqlite/NNN_name.sql.
//
//go:embed sql
var SQL embed.FS

// OpenAPI is the OpenAPI 3.1 document of the gateway's HTTP API (served at /openapi.yaml).
//
//go:embed openapi.yaml
var OpenAPI []byte
