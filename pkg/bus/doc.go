// Package bus is membus's use of NATS JetStream: subject and stream names under one prefix
// (names.go), stream creation (streams.go), connecting (connect.go), the consumer runner that
// acks, retries with backoff and dead-letters (runner.go, dlq.go), the transactional outbox relay
// (outbox.go), request/reply RPC endpoints (rpc.go) and deterministic message ids (ids.go). The
// embedded server of `membus up` is apart, in package embedded.
package bus
