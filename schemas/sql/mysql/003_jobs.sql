-- Scheduled jobs of the summarizer (digests, dedup sweep): the last bucket each job completed
-- (2026-11-30, 2026-W49, 2026-11), so a job is idempotent per bucket and missed buckets are
-- caught up, and the dedup sweep's watermark (memories changed after it are swept next).
CREATE TABLE IF NOT EXISTS jobs (
  name          VARCHAR(64)  NOT NULL PRIMARY KEY,
  bucket        VARCHAR(16)  NOT NULL DEFAULT '',
  watermark_us  BIGINT       NOT NULL DEFAULT 0,
  updated_us    BIGINT       NOT NULL
);

-- The dedup sweep reads memories changed since its watermark; digests read a period's
-- memories and archives by creation time.
CREATE INDEX IF NOT EXISTS memories_changed ON memories (updated_us);
CREATE INDEX IF NOT EXISTS memories_created ON memories (created_us);
CREATE INDEX IF NOT EXISTS archives_created ON archives (created_us);
