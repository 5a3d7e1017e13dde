module github.com/membus/membus/services/ingest

go 1.26.8

require (
	github.com/membus/membus/pkg v0.0.0
	github.com/membus/membus/schemas v0.0.0
)

replace (
	github.com/membus/membus/pkg => ../../pkg
	github.com/membus/membus/schemas => ../../schemas
)
