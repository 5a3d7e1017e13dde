-- membus schema v1 (MySQL / MariaDB 10.6+). Times are unix microseconds (BIGINT) so MySQL and
-- SQLite share one representation. Every row that holds user data carries account_id.
CREATE TABLE IF NOT EXISTS api_keys (
  id            VARCHAR(32)  NOT NULL PRIMARY KEY,
  key_hash      CHAR(64)     NOT NULL,
  account_id    VARCHAR(64)  NOT NULL,
  user_id       VARCHAR(255) NOT NULL DEFAULT '',
  role          VARCHAR(16)  NOT NULL,
  name          VARCHAR(255) NOT NULL DEFAULT '',
  created_us    BIGINT       NOT NULL,
  revoked_us    BIGINT       NULL,
  UNIQUE KEY api_keys_hash (key_hash)
);

CREATE TABLE IF NOT EXISTS sessions (
  account_id            VARCHAR(64)  NOT NULL,
  session_id            VARCHAR(255) NOT NULL,
  user_id               VARCHAR(255) NOT NULL,
  agent_id              VARCHAR(255) NOT NULL DEFAULT '',
  session_key           VARCHAR(512) NOT NULL DEFAULT '',
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
  overview              MEDIUMTEXT   NULL,
  created_us            BIGINT       NOT NULL,
  updated_us            BIGINT       NOT NULL,
  PRIMARY KEY (account_id, session_id)
);

CREATE TABLE IF NOT EXISTS messages (
  account_id  VARCHAR(64)  NOT NULL,
  session_id  VARCHAR(255) NOT NULL,
  seq         BIGINT       NOT NULL,
  message_id  VARCHAR(255) NOT NULL,
  event_id    VARCHAR(255) NOT NULL,
  position    INT          NOT NULL,
  role        VARCHAR(16)  NOT NULL,
  name        VARCHAR(255) NOT NULL DEFAULT '',
  content     MEDIUMTEXT   NOT NULL,
  parts       MEDIUMTEXT   NOT NULL,
  tokens      INT          NOT NULL,
  created_us  BIGINT       NOT NULL,
  archive_id  CHAR(36)     NULL,
  PRIMARY KEY (account_id, session_id, seq),
  UNIQUE KEY messages_identity (account_id, session_id, message_id),
  KEY messages_order (account_id, session_id, created_us, position)
);

CREATE TABLE IF NOT EXISTS archives (
  id          CHAR(36)     NOT NULL PRIMARY KEY,
  account_id  VARCHAR(64)  NOT NULL,
  session_id  VARCHAR(255) NOT NULL,
  user_id     VARCHAR(255) NOT NULL,
  agent_id    VARCHAR(255) NOT NULL DEFAULT '',
  from_seq    BIGINT       NOT NULL,
  to_seq      BIGINT       NOT NULL,
  kind        VARCHAR(16)  NOT NULL,
  state       VARCHAR(16)  NOT NULL,
  request_id  VARCHAR(255) NOT NULL,
  tokens      BIGINT       NOT NULL DEFAULT 0,
  abstract    TEXT         NULL,
  overview    MEDIUMTEXT   NULL,
  memories    TEXT         NULL,
  created_us  BIGINT       NOT NULL,
  updated_us  BIGINT       NOT NULL,
  UNIQUE KEY archives_range (account_id, session_id, from_seq),
  KEY archives_session (account_id, session_id, to_seq),
  KEY archives_request (account_id, request_id)
);

CREATE TABLE IF NOT EXISTS memories (
  id             CHAR(36)     NOT NULL PRIMARY KEY,
  account_id     VARCHAR(64)  NOT NULL,
  user_id        VARCHAR(255) NOT NULL,
  agent_id       VARCHAR(255) NOT NULL DEFAULT '',
  scope          VARCHAR(16)  NOT NULL,
  category       VARCHAR(32)  NOT NULL,
  subject        VARCHAR(191) NOT NULL DEFAULT '',
  attribute      VARCHAR(191) NOT NULL DEFAULT '',
  polarity       SMALLINT     NOT NULL DEFAULT 1,
  value          TEXT         NOT NULL,
  abstract       VARCHAR(1024) NOT NULL,
  text           TEXT         NOT NULL,
  importance     DOUBLE       NOT NULL DEFAULT 0.5,
  sources        TEXT         NOT NULL,
  event_us       BIGINT       NULL,
  valid_from_us  BIGINT       NOT NULL,
  valid_to_us    BIGINT       NULL,
  superseded_by  CHAR(36)     NULL,
  duplicate_of   CHAR(36)     NULL,
  access_count   BIGINT       NOT NULL DEFAULT 0,
  content_hash   CHAR(64)     NOT NULL,
  embedding      MEDIUMBLOB   NULL,
  embed_model    VARCHAR(255) NOT NULL DEFAULT '',
  created_us     BIGINT       NOT NULL,
  updated_us     BIGINT       NOT NULL,
  KEY memories_user (account_id, user_id, updated_us),
  KEY memories_slot (account_id, user_id, subject, attribute)
);

CREATE TABLE IF NOT EXISTS memory_sources (
  memory_id   CHAR(36)     NOT NULL,
  account_id  VARCHAR(64)  NOT NULL,
  session_id  VARCHAR(255) NOT NULL,
  message_id  VARCHAR(255) NOT NULL,
  PRIMARY KEY (memory_id, session_id, message_id),
  KEY memory_sources_session (account_id, session_id)
);

CREATE TABLE IF NOT EXISTS summaries (
  id          CHAR(36)     NOT NULL PRIMARY KEY,
  account_id  VARCHAR(64)  NOT NULL,
  user_id     VARCHAR(255) NOT NULL,
  agent_id    VARCHAR(255) NOT NULL DEFAULT '',
  period      VARCHAR(8)   NOT NULL,
  bucket      VARCHAR(16)  NOT NULL,
  text        MEDIUMTEXT   NOT NULL,
  created_us  BIGINT       NOT NULL,
  updated_us  BIGINT       NOT NULL,
  UNIQUE KEY summaries_bucket (account_id, user_id, agent_id, period, bucket)
);

CREATE TABLE IF NOT EXISTS tombstones (
  account_id  VARCHAR(64)  NOT NULL,
  user_id     VARCHAR(255) NOT NULL,
  session_id  VARCHAR(255) NOT NULL DEFAULT '',
  created_us  BIGINT       NOT NULL,
  PRIMARY KEY (account_id, user_id, session_id)
);

CREATE TABLE IF NOT EXISTS commit_results (
  request_id  VARCHAR(255) NOT NULL PRIMARY KEY,
  account_id  VARCHAR(64)  NOT NULL,
  session_id  VARCHAR(255) NOT NULL,
  result      TEXT         NOT NULL,
  created_us  BIGINT       NOT NULL
);

CREATE TABLE IF NOT EXISTS outbox (
  id           VARCHAR(191) NOT NULL PRIMARY KEY,
  subject      VARCHAR(512) NOT NULL,
  payload      MEDIUMBLOB   NOT NULL,
  created_us   BIGINT       NOT NULL,
  attempts     INT          NOT NULL DEFAULT 0,
  sent_us      BIGINT       NULL,
  dead_us      BIGINT       NULL,
  dead_reason  TEXT         NULL,
  KEY outbox_pending (sent_us, dead_us, created_us)
);
