package adapter

import "github.com/zcgw/zcgw/outbox"

// adapterSchema is the DDL of the adapter's own tables. Schema appends the
// outbox tables, because postings are queued in the same transaction as
// the shadow change and the idempotency completion.
//
// The shadow ledger is not a stored balance that is updated in place: an
// account's last known core balance is its opening balance plus its
// adjustments plus the signed sum of its postings the outbox marked
// APPLIED, so the shadow can never disagree with the outbox about what the
// core was told.
const adapterSchema = `
CREATE TABLE IF NOT EXISTS AdapterBank (
  bank_id        TEXT PRIMARY KEY,
  status         TEXT NOT NULL CHECK (status IN ('INITIALIZED')),
  boj_prefund    INTEGER NOT NULL,
  initialized_at TEXT NOT NULL
);

-- The coordinator's idempotency table (coordinator/idem; spec 003
-- IdempotencyKeys), reused rather than reinvented (spec 001 §18.3 #2): the
-- atomic claim on request_id is idem.Acquire's INSERT-first. The DDL is the
-- coordinator's, column for column (TestIdempotencyKeysMatchCoordinator).
CREATE TABLE IF NOT EXISTS IdempotencyKeys (
  key           TEXT PRIMARY KEY,
  status        TEXT NOT NULL DEFAULT 'PROCESSING', -- PROCESSING|DONE
  response_body TEXT,
  created_at    TEXT NOT NULL,
  updated_at    TEXT,
  request_hash  TEXT                                -- sha256hex(body); NULL = no body comparison
);

-- The owner of an in-progress (PROCESSING) request record of a command
-- that asks the core between its claim and its answer (name-check): the
-- process that claimed it (procid owner string), a token for this claim,
-- when its lease expires, and the request body so that a recovery can ask
-- again. A record whose owner is dead (lease expired, or an earlier start
-- of this node) is taken over and completed (RecoverRequests).
CREATE TABLE IF NOT EXISTS AdapterRequestClaims (
  key        TEXT PRIMARY KEY,  -- IdempotencyKeys.key
  command    TEXT NOT NULL,
  body       TEXT NOT NULL,     -- the request JSON
  owner      TEXT NOT NULL,     -- <node>/<epoch>/<worker>
  token      TEXT NOT NULL,     -- this claim (a takeover writes a new one)
  expires_at TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_request_claims_expiry ON AdapterRequestClaims(expires_at);

CREATE TABLE IF NOT EXISTS AdapterAccounts (
  account_hash    TEXT PRIMARY KEY,
  core_account    TEXT NOT NULL UNIQUE,
  holder_name     TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('ACTIVE','FROZEN')),
  -- the account's lifecycle at the core (docs/bank-api.md): CLOSING_HOLD
  -- refuses credits, CLOSED every posting. status is the bank's freeze.
  lifecycle       TEXT NOT NULL DEFAULT 'OPEN' CHECK (lifecycle IN ('OPEN','CLOSING_HOLD','CLOSED')),
  currency        TEXT,            -- ISO 4217 of the account; NULL = the adapter's Config.Currency
  opening_balance INTEGER NOT NULL,
  adjustment      INTEGER NOT NULL DEFAULT 0,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS AdapterHolds (
  reservation_ref TEXT PRIMARY KEY,
  txid            TEXT NOT NULL,
  request_id      TEXT NOT NULL,
  account_hash    TEXT NOT NULL REFERENCES AdapterAccounts(account_hash),
  amount          INTEGER NOT NULL CHECK (amount > 0),
  status          TEXT NOT NULL CHECK (status IN ('HELD','RELEASED','CONSUMED')),
  consumed_by     TEXT,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_holds_account ON AdapterHolds(account_hash, status);
CREATE INDEX IF NOT EXISTS idx_holds_txid ON AdapterHolds(txid);

-- The adapter's side of every posting it queued: the direction on the
-- account (+1 credit, -1 debit) and the request that caused it. The row's
-- state lives in AdapterOutbox (joined by ref).
CREATE TABLE IF NOT EXISTS AdapterPostings (
  ref             TEXT PRIMARY KEY,
  outbox_id       INTEGER NOT NULL,
  txid            TEXT NOT NULL,
  account_hash    TEXT NOT NULL REFERENCES AdapterAccounts(account_hash),
  kind            TEXT NOT NULL CHECK (kind IN ('DEBIT','CREDIT','REVERSAL')),
  direction       INTEGER NOT NULL CHECK (direction IN (-1, 1)),
  amount          INTEGER NOT NULL CHECK (amount > 0),
  reversal_of     TEXT UNIQUE,
  request_id      TEXT NOT NULL,
  reservation_ref TEXT,
  created_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_postings_account ON AdapterPostings(account_hash);
CREATE INDEX IF NOT EXISTS idx_postings_txid ON AdapterPostings(txid);

-- credit-notify / rtp-notify: stored, pulled by the core exactly once.
CREATE TABLE IF NOT EXISTS AdapterNotifications (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id   TEXT NOT NULL UNIQUE,
  kind         TEXT NOT NULL CHECK (kind IN ('CREDIT','RTP')),
  ref          TEXT NOT NULL,
  account_hash TEXT,
  amount       INTEGER NOT NULL,
  payload_json TEXT NOT NULL,
  status       TEXT NOT NULL CHECK (status IN ('NEW','PULLED')),
  pull_token   TEXT,
  created_at   TEXT NOT NULL,
  pulled_at    TEXT
);
CREATE INDEX IF NOT EXISTS idx_notifications_new ON AdapterNotifications(id) WHERE status = 'NEW';

-- Local AML/sanctions screening list used by authority-check.
CREATE TABLE IF NOT EXISTS AdapterScreening (
  entry_type TEXT NOT NULL CHECK (entry_type IN ('ACCOUNT','TXID','VAULT_REF')),
  value      TEXT NOT NULL,
  reason     TEXT NOT NULL,
  added_at   TEXT NOT NULL,
  PRIMARY KEY (entry_type, value)
);

-- Audit trail of the bank side (debit-settled, screening decisions,
-- compensation, drift resolution).
CREATE TABLE IF NOT EXISTS AdapterAuditLog (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  event        TEXT NOT NULL,
  txid         TEXT,
  request_id   TEXT,
  payload_json TEXT,
  occurred_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_audit_txid ON AdapterAuditLog(txid);

-- Reconciliation drifts: one row per detected discrepancy, linked to the
-- real Case opened for it.
CREATE TABLE IF NOT EXISTS AdapterReconDrift (
  drift_id       TEXT PRIMARY KEY,
  bank_id        TEXT NOT NULL,
  account_hash   TEXT NOT NULL,
  core_account   TEXT NOT NULL,
  shadow_balance INTEGER NOT NULL,
  core_balance   INTEGER NOT NULL,
  drift          INTEGER NOT NULL,
  source         TEXT NOT NULL CHECK (source IN ('INQUIRY','RESULT_FILE','BALANCE_FILE')),
  status         TEXT NOT NULL CHECK (status IN ('OPEN','RESOLVED')),
  case_id        TEXT,
  detected_at    TEXT NOT NULL,
  resolved_at    TEXT,
  resolution     TEXT
);
CREATE INDEX IF NOT EXISTS idx_drift_open ON AdapterReconDrift(account_hash) WHERE status = 'OPEN';

-- AdapterAliases: the bank's directory of payee references (pspr_ref) to
-- its accounts, which resolves an EXPRESS transfer sent without
-- payee.account_hash (spec 001 §13.1).
CREATE TABLE IF NOT EXISTS AdapterAliases (
  pspr_ref     TEXT PRIMARY KEY,
  account_hash TEXT NOT NULL REFERENCES AdapterAccounts(account_hash),
  created_at   TEXT NOT NULL
);
`

// Schema is the full DDL of an adapter database: the adapter tables plus
// outbox.Schema, then the shadow's running totals (shadow_totals.go),
// whose triggers read both, then the bank-side APIs' tables
// (bankside_schema.go). It is idempotent.
var Schema = adapterSchema + outbox.Schema + shadowTotalsSchema + bankSideSchema + customerTransfersSchema
