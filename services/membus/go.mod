module github.com/membus/membus/services/membus

go 1.26.8

require (
	github.com/membus/membus/pkg v0.0.0
	github.com/membus/membus/schemas v0.0.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)

replace (
	github.com/membus/membus/pkg => ../../pkg
	github.com/membus/membus/schemas => ../../schemas
)
