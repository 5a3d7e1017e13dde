-- messages_order (account_id, session_id, created_us, position) served only store.History,
-- which no service calls (history is read by seq and ordered in Go, session.sortHistory); each
-- message insert paid for it: on SQLite a fourth b-tree, about a sixth of the WAL pages a batch
-- of ingest writes and fsyncs. History's ORDER BY now sorts the rows of one session, found by
-- the primary key's (account_id, session_id) prefix.
DROP INDEX IF EXISTS messages_order;
