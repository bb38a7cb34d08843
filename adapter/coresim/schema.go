package coresim

// Schema is the DDL of a simulated core's own database.
const Schema = `
CREATE TABLE IF NOT EXISTS CoreAccounts (
  account     TEXT    PRIMARY KEY,
  name        TEXT    NOT NULL,
  balance     INTEGER NOT NULL CHECK (balance >= 0),
  status      TEXT    NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN','CLOSED')),
  currency    TEXT    NOT NULL DEFAULT 'JPY', -- ISO 4217: a foreign-currency deposit is an account of its own
  -- 解約保留: an OPEN account being closed refuses credits (ACMQ H/N).
  closing_hold INTEGER NOT NULL DEFAULT 0 CHECK (closing_hold IN (0, 1)),
  opened_at   TEXT    NOT NULL,
  updated_at  TEXT    NOT NULL
);
-- One line per applied posting. ref is deliberately NOT unique: the core
-- is not idempotent, a posting sent twice is journalled twice.
CREATE TABLE IF NOT EXISTS CoreJournal (
  journal_id    INTEGER PRIMARY KEY AUTOINCREMENT,
  ref           TEXT    NOT NULL,
  txid          TEXT    NOT NULL,
  account       TEXT    NOT NULL REFERENCES CoreAccounts(account),
  kind          TEXT    NOT NULL,
  amount        INTEGER NOT NULL,
  delta         INTEGER NOT NULL,
  balance_after INTEGER NOT NULL,
  reversal_of   TEXT,
  source        TEXT    NOT NULL,
  msg_id        TEXT,
  posted_at     TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_core_journal_ref  ON CoreJournal(ref);
CREATE INDEX IF NOT EXISTS idx_core_journal_acct ON CoreJournal(account, journal_id);
CREATE INDEX IF NOT EXISTS idx_core_journal_txid ON CoreJournal(txid);
CREATE TABLE IF NOT EXISTS CoreRefusals (
  refusal_id  INTEGER PRIMARY KEY AUTOINCREMENT,
  ref         TEXT    NOT NULL,
  txid        TEXT    NOT NULL,
  account     TEXT    NOT NULL,
  kind        TEXT    NOT NULL,
  amount      INTEGER NOT NULL,
  reason_code TEXT    NOT NULL,
  source      TEXT    NOT NULL,
  msg_id      TEXT,
  refused_at  TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_core_refusals_ref ON CoreRefusals(ref);
CREATE TABLE IF NOT EXISTS CoreHolds (
  hold_id     INTEGER PRIMARY KEY AUTOINCREMENT,
  ref         TEXT    NOT NULL,
  txid        TEXT    NOT NULL,
  account     TEXT    NOT NULL REFERENCES CoreAccounts(account),
  amount      INTEGER NOT NULL CHECK (amount > 0),
  status      TEXT    NOT NULL CHECK (status IN ('ACTIVE','RELEASED','CONSUMED')),
  created_at  TEXT    NOT NULL,
  updated_at  TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_core_holds_acct ON CoreHolds(account, status);
CREATE INDEX IF NOT EXISTS idx_core_holds_ref  ON CoreHolds(ref);
CREATE TABLE IF NOT EXISTS CoreNotifications (
  notification_id INTEGER PRIMARY KEY AUTOINCREMENT,
  ref         TEXT    NOT NULL,
  txid        TEXT    NOT NULL,
  account     TEXT    NOT NULL,
  kind        TEXT    NOT NULL,
  amount      INTEGER NOT NULL,
  text        TEXT    NOT NULL,
  msg_id      TEXT,
  received_at TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS CoreWatchlist (
  name       TEXT PRIMARY KEY,
  listed_at  TEXT NOT NULL
);
-- The MQ bridge's record of processed requests (see package doc): the
-- MsgID of a request is written in the same transaction as its effect.
CREATE TABLE IF NOT EXISTS CoreProcessed (
  msg_id       TEXT PRIMARY KEY,
  reply        BLOB,
  processed_at TEXT NOT NULL
);
-- Batch control: one run per (bank, business date, file sequence).
CREATE TABLE IF NOT EXISTS CoreBatchRuns (
  run_key     TEXT PRIMARY KEY,
  file_name   TEXT NOT NULL,
  records     INTEGER NOT NULL,
  applied     INTEGER NOT NULL,
  refused     INTEGER NOT NULL,
  result      BLOB NOT NULL,
  ran_at      TEXT NOT NULL
);
`
