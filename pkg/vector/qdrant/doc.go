// Package qdrant is the Qdrant adapter of vector.Store, over the gRPC API of
// github.com/qdrant/go-client.
//
// # Collection
//
// One collection per deployment (Config.Collection, required; the
// deployment's MEMBUS_QDRANT_COLLECTION), created on first Open:
//
//   - named dense vector `dense`, cosine distance, the embedder's dimension;
//   - sparse vector `bm25` with the IDF modifier;
//   - keyword payload indexes on account_id (is_tenant: true) and user_id;
//   - collection metadata (Qdrant 1.16+): membus_embed_model,
//     membus_embed_dim, membus_bm25_avg_len, membus_format.
//
// Open reads the collection back and refuses, with vector.ErrModelMismatch,
// a collection whose stored model id or dense dimension differs from the
// embedder's, or that has no model id at all (not made by membus, or a
// Qdrant that drops collection metadata): vectors of two models never mix.
// Upsert checks the model id too. Model "" and Dim 0 adopt the stored model
// (MEMBUS_EMBEDDER=auto); without a collection that is ErrNoCollection.
//
// # Points
//
// The point id is the memory UUID (Qdrant accepts only UUIDs or unsigned
// integers; anything else is vector.ErrInvalid before any call). The
// payload holds account_id, user_id, agent_id, scope, kind, category, text,
// created_at (RFC 3339, UTC) and the point's string payload under
// "payload". With cosine distance Qdrant stores vectors L2-normalised, so
// Get, Scroll and Search return the normalised vector (the embedders
// membus uses already normalise).
//
// # Keyword side
//
// The `bm25` vectors are built here from vector.Terms, the local store's
// tokenizer: dimension = FNV-1a-32 of the term; document value = the
// term-frequency half of BM25, tf·(k1+1)/(tf + k1·(1−b+b·len/avgLen)) with
// k1 1.2, b 0.75; query value 1 per distinct term. Qdrant multiplies by the
// IDF, so the score is BM25. avgLen is a constant recorded in the
// collection's metadata when it is created (default 12 terms, about one
// memory sentence) and read back by every replica: a running average would
// change the right value of every stored point with each write, and
// rewriting them is not an option; a fixed one keeps every point comparable,
// at the cost of a slightly mis-centred length normalisation when the real
// average drifts. Differences from the local store: IDF statistics (N and
// document frequency) are Qdrant's, over the whole collection, not per
// (account, user) partition, so the keyword scores of the two stores differ
// in scale (never in which points can match); and two terms with the same
// 32-bit hash share a dimension (a rare spurious match).
//
// # Search
//
// With both a query vector and query terms, Search sends one Query with two
// prefetches (dense, k; bm25, k), each carrying the tenant filter
// (account_id AND user_id must-match, plus agent, scopes, kinds,
// categories), fused by RRF, limit 2k: the union of the two top-k lists.
// RRF discards the per-side scores that vector.Hit carries, so Dense is the
// cosine of the query with the returned stored vector (the cosine Qdrant
// ranked by, clamped to [0,1]) and Keyword comes from a second sparse Query
// restricted to the candidates' ids under the same tenant filter. A search
// with only one side is one plain Query. Delete, Get, Scroll and Count are
// filtered by the tenant as well (Count by account). Every call has
// Config.Timeout (default 5 s). Search is Qdrant's HNSW for large tenants;
// exactness is the local store's job.
//
// # What was verified only against the fake
//
// No Qdrant server could run where this package was written. Everything
// above was exercised against qdranttest, an in-process fake gRPC server
// built on the go-client's generated server interfaces, and against nothing
// else: the conformance suite (vectortest.Run and RunReopen), collection
// shape, model/dimension checks, the tenant filter on every prefetch, the
// BM25 scores, id rules and an unreachable server. The fake's rules (id
// forms, must-filter semantics, cosine normalisation, IDF formula, score
// order, RRF, scroll offsets, NotFound/AlreadyExists/InvalidArgument codes)
// are written from Qdrant's documentation, not observed. Not verified at
// all: real Qdrant's treatment of collection metadata, of is_tenant indexes,
// of the exact IDF it applies, HNSW recall under filters, TLS and API keys.
// TestRealQdrant runs the same suite against a real Qdrant when
// MEMBUS_TEST_QDRANT_URL (http://host:6334, the gRPC port) is set; until it
// has run green, treat the list above as unproven on Qdrant itself.
package qdrant
