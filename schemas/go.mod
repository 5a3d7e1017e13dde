module github.com/membus/membus/schemas

go 1.26.8

toolchain go1.27.3
