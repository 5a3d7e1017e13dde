-- membus schema v1 (SQLite, embedded mode). Times are unix microseconds (BIGINT) so MySQL and
-- SQLite share one representation. Every row that holds user data carries account_id.
CREATE TABLE IF NOT EXISTS api_keys (
  id            TEXT  NOT NULL PRIMARY KEY,
  key_hash      TEXT     NOT NULL,
  account_id    TEXT  NOT NULL,
  user_id       TEXT NOT NULL DEFAULT '',
  role          TEXT  NOT NULL,
  name          TEXT NOT NULL DEFAULT '',
  created_us    BIGINT       NOT NULL,
  revoked_us    BIGINT       NULL
);

CREATE TABLE IF NOT EXISTS sessions (
  account_id            TEXT  NOT NULL,
  session_id            TEXT NOT NULL,
  user_id               TEXT NOT NULL,
  agent_id              TEXT NOT NULL DEFAULT '',
  session_key           TEXT NOT NULL DEFAULT '',
  next_seq              BIGINT       NOT NULL DEFAULT 1,
  message_count         BIGINT       NOT NULL DEFAULT 0,
  pending_tokens        BIGINT       NOT NULL DEFAULT 0,
  commit_requested_upto BIGINT       NOT NULL DEFAULT 0,
  archived_upto         BIGINT       NOT NULL DEFAULT 0,
  applied_turns_seq     BIGINT       NOT NULL DEFAULT 0,
  epoch                 BIGINT       NOT NULL DEFAULT 0,
  commit_count          BIGINT       NOT NULL DEFAULT 0,
  commit_threshold      INT          NULL,
  keep_recent           INT          NULL,
  summarized_upto       BIGINT       NOT NULL DEFAULT 0,
  overview              TEXT   NULL,
  created_us            BIGINT       NOT NULL,
  updated_us            BIGINT       NOT NULL,
  PRIMARY KEY (account_id, session_id)
);

CREATE TABLE IF NOT EXISTS messages (
  account_id  TEXT  NOT NULL,
  session_id  TEXT NOT NULL,
  seq         BIGINT       NOT NULL,
  message_id  TEXT NOT NULL,
  event_id    TEXT NOT NULL,
  position    INT          NOT NULL,
  role        TEXT  NOT NULL,
  name        TEXT NOT NULL DEFAULT '',
  content     TEXT   NOT NULL,
  parts       TEXT   NOT NULL,
  tokens      INT          NOT NULL,
  created_us  BIGINT       NOT NULL,
  archive_id  TEXT     NULL,
  PRIMARY KEY (account_id, session_id, seq)
);

CREATE TABLE IF NOT EXISTS archives (
  id          TEXT     NOT NULL PRIMARY KEY,
  account_id  TEXT  NOT NULL,
  session_id  TEXT NOT NULL,
  user_id     TEXT NOT NULL,
  agent_id    TEXT NOT NULL DEFAULT '',
  from_seq    BIGINT       NOT NULL,
  to_seq      BIGINT       NOT NULL,
  kind        TEXT  NOT NULL,
  state       TEXT  NOT NULL,
  request_id  TEXT NOT NULL,
  tokens      BIGINT       NOT NULL DEFAULT 0,
  abstract    TEXT         NULL,
  overview    TEXT   NULL,
  memories    TEXT         NULL,
  created_us  BIGINT       NOT NULL,
  updated_us  BIGINT       NOT NULL
);

CREATE TABLE IF NOT EXISTS memories (
  id             TEXT     NOT NULL PRIMARY KEY,
  account_id     TEXT  NOT NULL,
  user_id        TEXT NOT NULL,
  agent_id       TEXT NOT NULL DEFAULT '',
  scope          TEXT  NOT NULL,
  category       TEXT  NOT NULL,
  subject        TEXT NOT NULL DEFAULT '',
  attribute      TEXT NOT NULL DEFAULT '',
  polarity       INTEGER     NOT NULL DEFAULT 1,
  value          TEXT         NOT NULL,
  abstract       TEXT NOT NULL,
  text           TEXT         NOT NULL,
  importance     REAL       NOT NULL DEFAULT 0.5,
  sources        TEXT         NOT NULL,
  event_us       BIGINT       NULL,
  valid_from_us  BIGINT       NOT NULL,
  valid_to_us    BIGINT       NULL,
  superseded_by  TEXT     NULL,
  duplicate_of   TEXT     NULL,
  access_count   BIGINT       NOT NULL DEFAULT 0,
  content_hash   TEXT     NOT NULL,
  embedding      BLOB   NULL,
  embed_model    TEXT NOT NULL DEFAULT '',
  created_us     BIGINT       NOT NULL,
  updated_us     BIGINT       NOT NULL
);

CREATE TABLE IF NOT EXISTS memory_sources (
  memory_id   TEXT     NOT NULL,
  account_id  TEXT  NOT NULL,
  session_id  TEXT NOT NULL,
  message_id  TEXT NOT NULL,
  PRIMARY KEY (memory_id, session_id, message_id)
);

CREATE TABLE IF NOT EXISTS summaries (
  id          TEXT     NOT NULL PRIMARY KEY,
  account_id  TEXT  NOT NULL,
  user_id     TEXT NOT NULL,
  agent_id    TEXT NOT NULL DEFAULT '',
  period      TEXT   NOT NULL,
  bucket      TEXT  NOT NULL,
  text        TEXT   NOT NULL,
  created_us  BIGINT       NOT NULL,
  updated_us  BIGINT       NOT NULL
);

CREATE TABLE IF NOT EXISTS tombstones (
  account_id  TEXT  NOT NULL,
  user_id     TEXT NOT NULL,
  session_id  TEXT NOT NULL DEFAULT '',
  created_us  BIGINT       NOT NULL,
  PRIMARY KEY (account_id, user_id, session_id)
);

CREATE TABLE IF NOT EXISTS commit_results (
  request_id  TEXT NOT NULL PRIMARY KEY,
  account_id  TEXT  NOT NULL,
  session_id  TEXT NOT NULL,
  result      TEXT         NOT NULL,
  created_us  BIGINT       NOT NULL
);

CREATE TABLE IF NOT EXISTS outbox (
  id           TEXT NOT NULL PRIMARY KEY,
  subject      TEXT NOT NULL,
  payload      BLOB   NOT NULL,
  created_us   BIGINT       NOT NULL,
  attempts     INT          NOT NULL DEFAULT 0,
  sent_us      BIGINT       NULL,
  dead_us      BIGINT       NULL,
  dead_reason  TEXT         NULL
);

CREATE UNIQUE INDEX IF NOT EXISTS api_keys_hash ON api_keys (key_hash);
CREATE UNIQUE INDEX IF NOT EXISTS messages_identity ON messages (account_id, session_id, message_id);
CREATE INDEX IF NOT EXISTS messages_order ON messages (account_id, session_id, created_us, position);
CREATE UNIQUE INDEX IF NOT EXISTS archives_range ON archives (account_id, session_id, from_seq);
CREATE INDEX IF NOT EXISTS archives_session ON archives (account_id, session_id, to_seq);
CREATE INDEX IF NOT EXISTS archives_request ON archives (account_id, request_id);
CREATE INDEX IF NOT EXISTS memories_user ON memories (account_id, user_id, updated_us);
CREATE INDEX IF NOT EXISTS memories_slot ON memories (account_id, user_id, subject, attribute);
CREATE INDEX IF NOT EXISTS memory_sources_session ON memory_sources (account_id, session_id);
CREATE UNIQUE INDEX IF NOT EXISTS summaries_bucket ON summaries (account_id, user_id, agent_id, period, bucket);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (sent_us, dead_us, created_us);
