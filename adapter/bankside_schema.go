package adapter

// bankSideSchema is the DDL of the bank-side APIs' tables (docs/bank-api.md):
// which customer holds which accounts, the incoming-transfer filters, and
// the approval requests of credits a filter holds.
const bankSideSchema = `
-- The customer channel's directory: the accounts each customer id sees
-- on GET /bank/{bank_id}/v1/me/accounts (the bank's channel authenticates
-- the customer and names it in X-Customer-Id).
CREATE TABLE IF NOT EXISTS AdapterCustomerAccounts (
  customer_id  TEXT NOT NULL,
  account_hash TEXT NOT NULL REFERENCES AdapterAccounts(account_hash),
  created_at   TEXT NOT NULL,
  PRIMARY KEY (customer_id, account_hash)
);
CREATE INDEX IF NOT EXISTS idx_customer_accounts_account ON AdapterCustomerAccounts(account_hash);

-- Incoming-transfer filters (spec 004 着金フィルタ): evaluated by
-- execute-credit before any posting. scope ACCOUNT names one account,
-- BANK every account of the bank. condition_json holds the type's
-- condition (max_amount; payer_account_hash; payer_bank_id; edi_pattern).
CREATE TABLE IF NOT EXISTS AdapterFilters (
  filter_id      TEXT PRIMARY KEY,
  scope          TEXT NOT NULL CHECK (scope IN ('ACCOUNT','BANK')),
  account_hash   TEXT REFERENCES AdapterAccounts(account_hash),
  filter_type    TEXT NOT NULL CHECK (filter_type IN ('AMOUNT_LIMIT','SENDER_BLOCK','SENDER_BANK_BLOCK','REQUIRE_APPROVAL','EDI_PATTERN')),
  condition_json TEXT NOT NULL,
  action         TEXT NOT NULL CHECK (action IN ('REJECT','HOLD_CONFIRM','HOLD_MANUAL')),
  description    TEXT,
  is_active      INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
  created_by     TEXT NOT NULL,
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  CHECK ((scope = 'ACCOUNT') = (account_hash IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS idx_filters_account ON AdapterFilters(account_hash);

-- A credit a HOLD_* filter holds: one per txid, PENDING until the payee
-- (HOLD_CONFIRM, customer API) or a teller (HOLD_MANUAL) decides (a
-- guarded UPDATE from PENDING). resume_notified_at: ZC was told.
CREATE TABLE IF NOT EXISTS AdapterApprovals (
  approval_id        TEXT PRIMARY KEY,
  txid               TEXT NOT NULL UNIQUE,
  account_hash       TEXT NOT NULL REFERENCES AdapterAccounts(account_hash),
  filter_id          TEXT NOT NULL,
  action             TEXT NOT NULL CHECK (action IN ('HOLD_CONFIRM','HOLD_MANUAL')),
  amount             INTEGER NOT NULL CHECK (amount > 0),
  payer_bank_id      TEXT,
  status             TEXT NOT NULL CHECK (status IN ('PENDING','APPROVED','REJECTED')),
  decided_by         TEXT,
  decided_at         TEXT,
  resume_notified_at TEXT,
  created_at         TEXT NOT NULL,
  updated_at         TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_approvals_account ON AdapterApprovals(account_hash, status);

-- The account lifecycle actions a teller asked of the core (open,
-- closing hold, lift, close; lifecycle.go): recorded PENDING in the same
-- transaction as the adapter's side of the change, then sent to the core
-- (coremsg ACMQ), then APPLIED or REFUSED. A PENDING one whose answer was
-- lost is sent again by the teller's retry: every action assigns a state,
-- so the core answers a repeat as a duplicate. idempotency_key: the
-- teller's key of an account creation (one account per key).
CREATE TABLE IF NOT EXISTS AdapterAccountOps (
  op_ref          TEXT PRIMARY KEY,
  idempotency_key TEXT UNIQUE,
  account_hash    TEXT NOT NULL,
  core_account    TEXT NOT NULL,
  action          TEXT NOT NULL CHECK (action IN ('OPEN','HOLD','LIFT','CLOSE')),
  status          TEXT NOT NULL CHECK (status IN ('PENDING','APPLIED','REFUSED')),
  request_json    TEXT NOT NULL,
  reason_code     TEXT,
  core_reason     TEXT,
  requested_by    TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_account_ops_account ON AdapterAccountOps(account_hash, status);
`

// customerTransfersSchema: the transfers a customer sent through the
// customer API (POST /bank/{bank_id}/v1/me/transfers), so that it reads
// back only its own.
const customerTransfersSchema = `
CREATE TABLE IF NOT EXISTS AdapterCustomerTransfers (
  txid            TEXT PRIMARY KEY,
  customer_id     TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  UNIQUE (customer_id, idempotency_key)
);
`
