-- messages_order (account_id, session_id, created_us, position) served only store.History,
-- which no service calls (history is read by seq and ordered in Go, session.sortHistory); each
-- message insert paid for it: a third secondary index of InnoDB to update. History's ORDER BY
-- now sorts the rows of one session, found by the primary key's (account_id, session_id) prefix.
-- MySQL DDL is not transactional: IF EXISTS makes a re-run after a crash harmless.
DROP INDEX IF EXISTS messages_order ON messages;
