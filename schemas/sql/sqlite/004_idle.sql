-- Idle commit: the time of the newest stored turn while the session holds messages that no
-- idle commit has covered yet (0: nothing waiting). Ingest's idle sweep commits a session whose
-- idle_since_us is older than the idle interval, once, and clears it in the same transaction.
ALTER TABLE sessions ADD COLUMN idle_since_us BIGINT NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS sessions_idle ON sessions (idle_since_us);
