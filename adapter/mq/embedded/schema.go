package embedded

import "time"

// schema is the queue file's DDL, applied idempotently by store.Open.
const schema = `
CREATE TABLE IF NOT EXISTS mq_queue (
  name              TEXT PRIMARY KEY,
  backout_threshold INTEGER NOT NULL DEFAULT 0 CHECK (backout_threshold >= 0),
  backout_queue     TEXT NOT NULL DEFAULT '',
  created_at        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS mq_connection (
  id           TEXT PRIMARY KEY,
  started_at   TEXT NOT NULL,
  heartbeat_at TEXT NOT NULL,
  lease_until  TEXT          -- heartbeat_at + the connection's own LeaseTTL
);
-- One row per queue with an exclusive consumer (ClaimConsumer); it lives
-- as long as its connection's lease (reap deletes it with the connection).
CREATE TABLE IF NOT EXISTS mq_consumer (
  queue      TEXT PRIMARY KEY REFERENCES mq_queue(name) ON DELETE CASCADE,
  conn       TEXT NOT NULL,
  pid        INTEGER NOT NULL,
  host       TEXT NOT NULL,
  app        TEXT NOT NULL DEFAULT '',
  proc_start TEXT NOT NULL DEFAULT '', -- the holder process's start (procfs), to tell a reused pid
  since      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS mq_message (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  queue         TEXT NOT NULL REFERENCES mq_queue(name) ON DELETE CASCADE,
  msg_id        BLOB NOT NULL CHECK (length(msg_id) = 24),
  correl_id     BLOB NOT NULL CHECK (length(correl_id) = 24),
  reply_to      TEXT NOT NULL DEFAULT '',
  persistent    INTEGER NOT NULL CHECK (persistent IN (0, 1)),
  priority      INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 9),
  put_at        TEXT NOT NULL,
  expires_at    TEXT,
  backout_count INTEGER NOT NULL DEFAULT 0 CHECK (backout_count >= 0),
  properties    BLOB NOT NULL,
  body          BLOB NOT NULL,
  claim_conn    TEXT,
  claim_session INTEGER,
  claimed_at    TEXT,
  CHECK ((claim_conn IS NULL) = (claim_session IS NULL))
);
CREATE INDEX IF NOT EXISTS mq_message_next ON mq_message(queue, priority DESC, seq) WHERE claim_conn IS NULL;
CREATE INDEX IF NOT EXISTS mq_message_correl ON mq_message(queue, correl_id);
CREATE INDEX IF NOT EXISTS mq_message_msgid ON mq_message(queue, msg_id);
CREATE INDEX IF NOT EXISTS mq_message_expiry ON mq_message(queue, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS mq_message_claim ON mq_message(claim_conn, claim_session) WHERE claim_conn IS NOT NULL;
`

// stampLayout is RFC3339 in UTC with a fixed nine-digit fraction, so that
// stored instants compare correctly as strings in SQL.
const stampLayout = "2006-01-02T15:04:05.000000000Z"

func stamp(t time.Time) string { return t.UTC().Format(stampLayout) }

func parseStamp(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
