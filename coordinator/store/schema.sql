-- zcgw coordinator schema: the one consolidated schema file (spec 003,
-- "migration rules": edit this file in place, never add numbered
-- migrations). Every statement is idempotent (IF NOT EXISTS / INSERT OR
-- IGNORE) so store.OpenCoordinator applies it on every start.
--
-- Every index here is listed in docs/schema.md (index catalog); the test
-- TestSchemaDocMatchesSQL in coordinator/store fails when they disagree.
--
-- Conventions: money is INTEGER minor units; instants are RFC3339 UTC TEXT
-- (clock.Stamp); business dates are JST 'YYYY-MM-DD'.

-- ---------------------------------------------------------------- ZC base

CREATE TABLE IF NOT EXISTS Participants (
  bank_id                      TEXT    PRIMARY KEY,           -- '001', '002', ...
  bank_name                    TEXT    NOT NULL,
  ingress_base_url             TEXT    NOT NULL,              -- '/bank/001'
  h_limit                      INTEGER NOT NULL DEFAULT 0,    -- H limit (JPY)
  h_used                       INTEGER NOT NULL DEFAULT 0,    -- H in use (JPY), materialized counter
  is_active                    INTEGER NOT NULL DEFAULT 1,
  registered_at                TEXT    NOT NULL,              -- RFC3339
  participation_mode           TEXT    NOT NULL DEFAULT 'FULL', -- FULL|RECEIVE_ONLY|SEND_ONLY
  tx_amount_limit              INTEGER,                       -- per-transfer limit
  daily_amount_limit           INTEGER,                       -- daily limit
  daily_amount_used            INTEGER NOT NULL DEFAULT 0,    -- daily total (lazy reset)
  daily_amount_last_reset_date TEXT,                          -- 'YYYY-MM-DD' (JST)
  hv_threshold                 INTEGER,                       -- PR-HV-THRESHOLD; NULL = default
  operating_window_start       TEXT,                          -- 'HH:MM' JST; NULL/NULL = always open
  operating_window_end         TEXT,
  participant_type             TEXT    NOT NULL DEFAULT 'BANK', -- BANK|GOVERNMENT
  is_fx_provider               INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS Transactions (
  txid                       TEXT    PRIMARY KEY,
  lane                       TEXT    NOT NULL,              -- EXPRESS|STANDARD|BULK|DEFERRED|RTP|HTLC|HIGH_VALUE|GTID|DIRECT_DEBIT
  state                      TEXT    NOT NULL,              -- TxState
  amount_value               INTEGER NOT NULL,
  amount_currency            TEXT    NOT NULL DEFAULT 'JPY',
  payer_bank_id              TEXT    NOT NULL,
  payer_account_hash         TEXT    NOT NULL,
  payee_bank_id              TEXT    NOT NULL,
  payee_account_hash         TEXT,
  pspr_ref                   TEXT,
  purpose                    TEXT,                          -- MERCHANT|P2P|BILL|SALARY|REFUND
  idempotency_key            TEXT    UNIQUE NOT NULL,
  schema_version             TEXT    NOT NULL DEFAULT '1.0',
  h_reservation_id           TEXT,                          -- -> HReservations
  decision_proof_ref         TEXT,
  finality_log_ref           TEXT,
  payer_bank_proof_ref       TEXT,                          -- JSON bank_proof_ref
  payee_bank_proof_ref       TEXT,                          -- JSON bank_proof_ref
  reason_code                TEXT,
  case_id                    TEXT,
  dns_cycle_id               TEXT,
  expires_at                 TEXT,                          -- RFC3339
  version                    INTEGER NOT NULL DEFAULT 0,    -- optimistic lock
  created_at                 TEXT    NOT NULL,
  updated_at                 TEXT    NOT NULL,
  external_settlement_status TEXT    DEFAULT 'NONE',        -- NONE|REQUESTED|SETTLED|FAILED|HOLD
  verification_id            TEXT,
  edi_ref                    TEXT,
  fatf_data_json             TEXT,
  is_cross_border            INTEGER NOT NULL DEFAULT 0,
  fatf16_applicable          INTEGER NOT NULL DEFAULT 0,
  mandate_id                 TEXT,
  pending_request_json       TEXT,                          -- suspended PaymentInitiated snapshot
  owner                      TEXT    NOT NULL DEFAULT 'ZC', -- single owner: ZC|CYCLE:<id>|VENUE:<id>|CHAIN:<set>
  pending_since              TEXT                           -- start of the current wait (lane primitives only)
);
CREATE INDEX IF NOT EXISTS idx_tx_state ON Transactions(state);
CREATE INDEX IF NOT EXISTS idx_tx_owner ON Transactions(owner, state);
CREATE INDEX IF NOT EXISTS idx_tx_payer ON Transactions(payer_bank_id, state);
CREATE INDEX IF NOT EXISTS idx_tx_payee ON Transactions(payee_bank_id, state);
CREATE INDEX IF NOT EXISTS idx_tx_dns   ON Transactions(dns_cycle_id);
CREATE INDEX IF NOT EXISTS idx_transactions_mandate_id ON Transactions(mandate_id);

CREATE TABLE IF NOT EXISTS HReservations (
  reservation_id TEXT    PRIMARY KEY,
  txid           TEXT    NOT NULL,
  bank_id        TEXT    NOT NULL,
  amount         INTEGER NOT NULL,
  mode           TEXT    NOT NULL DEFAULT 'RESERVED',       -- RESERVED|LOCKED
  is_released    INTEGER NOT NULL DEFAULT 0,
  created_at     TEXT    NOT NULL,
  released_at    TEXT,
  currency       TEXT    NOT NULL DEFAULT 'JPY'             -- JPY: Participants; else ParticipantCurrencyLimits
);
CREATE INDEX IF NOT EXISTS idx_hres_bank ON HReservations(bank_id, is_released);
-- zcgw addition: a transfer's open reservations (hlimit.ReleaseForTx at every
-- settle and cancel) found by index, not by a scan of every reservation ever made.
CREATE INDEX IF NOT EXISTS idx_hres_txid ON HReservations(txid, is_released);

CREATE TABLE IF NOT EXISTS ParticipantCurrencyLimits (
  bank_id  TEXT    NOT NULL,
  currency TEXT    NOT NULL,
  h_limit  INTEGER NOT NULL DEFAULT 0,
  h_used   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (bank_id, currency)
);

-- FinalityLog: INSERT ONLY, SHA-256 hash chain per COALESCE(txid, gtid, 'GLOBAL').
CREATE TABLE IF NOT EXISTS FinalityLog (
  log_id       TEXT    PRIMARY KEY,                -- UUID
  txid         TEXT,
  gtid         TEXT,
  event_type   TEXT    NOT NULL,                   -- FinalityEventType (coordinator/finality)
  state_from   TEXT,
  state_to     TEXT    NOT NULL,
  payload_json TEXT    NOT NULL,
  event_seq    INTEGER NOT NULL,                   -- from FinalitySeq
  occurred_at  TEXT    NOT NULL,
  prev_hash    TEXT,                               -- previous entry_hash of the chain, or 'GENESIS'
  entry_hash   TEXT                                -- SHA-256(prev|log_id|txid|gtid|event_type|state_from|state_to|payload_json|event_seq|occurred_at)
);
CREATE INDEX IF NOT EXISTS idx_fl_txid ON FinalityLog(txid);
CREATE INDEX IF NOT EXISTS idx_fl_gtid ON FinalityLog(gtid);
CREATE INDEX IF NOT EXISTS idx_fl_seq  ON FinalityLog(event_seq);
CREATE INDEX IF NOT EXISTS idx_fl_chain_seq  ON FinalityLog(txid, event_seq);
CREATE INDEX IF NOT EXISTS idx_fl_gchain_seq ON FinalityLog(gtid, event_seq);
CREATE UNIQUE INDEX IF NOT EXISTS idx_fl_chain_prev_hash
  ON FinalityLog(txid, prev_hash) WHERE txid IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS idx_fl_event_seq_unique ON FinalityLog(event_seq);
CREATE UNIQUE INDEX IF NOT EXISTS idx_fl_gtid_chain_prev_hash
  ON FinalityLog(gtid, prev_hash) WHERE gtid IS NOT NULL AND txid IS NULL;
-- zcgw addition: the GLOBAL chain gets the same fork guard as TX/GTID chains.
CREATE UNIQUE INDEX IF NOT EXISTS idx_fl_global_chain_prev_hash
  ON FinalityLog(prev_hash) WHERE txid IS NULL AND gtid IS NULL;
-- zcgw addition: finds the GLOBAL chain's tip without scanning TX/GTID entries.
CREATE INDEX IF NOT EXISTS idx_fl_global_seq
  ON FinalityLog(event_seq) WHERE txid IS NULL AND gtid IS NULL;

CREATE TABLE IF NOT EXISTS FinalitySeq (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  next_seq INTEGER NOT NULL
);
INSERT OR IGNORE INTO FinalitySeq (id, next_seq) VALUES (1, 0);

-- FinalityAuditAnchors: zcgw addition. The points up to which the FinalityLog was
-- audited clean (coordinator/finality VerifySince); the nightly audit verifies only
-- the entries after the newest. Each row is itself chained: anchor_hash covers the
-- previous row's anchor_hash, so a row edited, removed or added is found.
CREATE TABLE IF NOT EXISTS FinalityAuditAnchors (
  anchor_seq      INTEGER PRIMARY KEY,              -- event_seq of the last entry audited
  log_id          TEXT    NOT NULL,                 -- that entry's log_id
  entry_hash      TEXT    NOT NULL,                 -- that entry's entry_hash
  prev_anchor_seq INTEGER,                          -- the previous anchor (NULL for the first)
  entries         INTEGER NOT NULL,                 -- entries verified since the previous anchor
  audited_at      TEXT    NOT NULL,
  anchor_hash     TEXT    NOT NULL                  -- SHA-256(prev anchor_hash|anchor_seq|log_id|entry_hash|entries|audited_at)
);

-- EntityStateLog: INSERT ONLY history of non-transaction entity states.
CREATE TABLE IF NOT EXISTS EntityStateLog (
  log_id       TEXT    PRIMARY KEY,                -- 'ESL-<uuid>'
  entity_type  TEXT    NOT NULL,                   -- CASE|PSPR|BANK_ACCOUNT|REVERSAL|MANDATE|DEBIT_MANDATE|COLLECTION
  entity_id    TEXT    NOT NULL,
  event_type   TEXT    NOT NULL,                   -- e.g. 'CaseOpened'
  state_from   TEXT,
  state_to     TEXT    NOT NULL,
  reason_code  TEXT,
  actor        TEXT,                               -- ZC|OPS|BANK_{bankId}|SYSTEM
  payload_json TEXT,
  occurred_at  TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_esl_entity   ON EntityStateLog(entity_type, entity_id, occurred_at);
CREATE INDEX IF NOT EXISTS idx_esl_occurred ON EntityStateLog(occurred_at);

-- ---------------------------------------------------------------- DNS / IGS / LSM

CREATE TABLE IF NOT EXISTS DnsCycles (
  cycle_id                  TEXT PRIMARY KEY,
  business_date             TEXT NOT NULL,                 -- 'YYYY-MM-DD' (not UNIQUE)
  state                     TEXT NOT NULL DEFAULT 'OPEN',  -- OPEN|KICKED|SETTLED|HOLD_ACTIVE
  igs_mode                  TEXT NOT NULL DEFAULT 'NORMAL',-- NORMAL|STOP|RINGFENCED|RINGFENCED_PLUS
  kicked_at                 TEXT,
  settled_at                TEXT,
  hold_reason               TEXT,                          -- JSON {reason, shortfalls}
  net_positions             TEXT,                          -- JSON {bank_id: net_amount}
  updated_at                TEXT,
  currency                  TEXT NOT NULL DEFAULT 'JPY',
  intraday_seq              INTEGER NOT NULL DEFAULT 1,
  created_at                TEXT NOT NULL,
  hold_causing_participants TEXT,                          -- JSON array
  dns_recovery_reserve      INTEGER,
  reserve_explain_hash      TEXT,
  reserve_confidence        REAL,
  settlement_chain          TEXT,                          -- NULL = JPY BOJ-Net
  public_message_id         TEXT                           -- DNS_HOLD_{business_date} while HOLD_ACTIVE
);
CREATE INDEX IF NOT EXISTS idx_dns_business_date ON DnsCycles(business_date);

CREATE TABLE IF NOT EXISTS DnsNetPositions (
  id            TEXT    PRIMARY KEY,
  cycle_id      TEXT    NOT NULL,
  bank_id       TEXT    NOT NULL,
  gross_send    INTEGER NOT NULL DEFAULT 0,
  gross_receive INTEGER NOT NULL DEFAULT 0,
  net_position  INTEGER NOT NULL DEFAULT 0,        -- >0 net receiver, <0 net payer
  is_settled    INTEGER NOT NULL DEFAULT 0,
  FOREIGN KEY (cycle_id) REFERENCES DnsCycles(cycle_id)
);

CREATE TABLE IF NOT EXISTS IgsDeferQueue (
  defer_id                   TEXT PRIMARY KEY,
  txid                       TEXT NOT NULL,
  cycle_id                   TEXT NOT NULL,
  payer_bank_id              TEXT NOT NULL,
  payee_bank_id              TEXT NOT NULL,
  amount_value               INTEGER NOT NULL,
  reason_code                TEXT NOT NULL,        -- DNS_IGS_THROTTLED|DNS_RINGFENCED|DNS_HOLD_IGS_STOPPED
  priority                   INTEGER NOT NULL DEFAULT 100,
  scheduled_execution_window TEXT NOT NULL,
  status                     TEXT NOT NULL DEFAULT 'DEFERRED', -- DEFERRED|RESUMED|CANCELLED
  enqueued_at                TEXT NOT NULL,
  resumed_at                 TEXT
);
CREATE INDEX IF NOT EXISTS idx_igs_defer_status ON IgsDeferQueue(status, priority, scheduled_execution_window);
CREATE UNIQUE INDEX IF NOT EXISTS idx_igs_defer_txid ON IgsDeferQueue(txid);

CREATE TABLE IF NOT EXISTS IgsThrottleState (
  cycle_id        TEXT NOT NULL,
  bank_id         TEXT NOT NULL,
  admitted_amount INTEGER NOT NULL DEFAULT 0,
  admitted_count  INTEGER NOT NULL DEFAULT 0,
  updated_at      TEXT NOT NULL,
  PRIMARY KEY (cycle_id, bank_id)
);

CREATE TABLE IF NOT EXISTS LsmRuns (
  run_id             TEXT PRIMARY KEY,
  business_date      TEXT NOT NULL,
  window_id          TEXT NOT NULL,
  mode               TEXT NOT NULL,          -- OPTIMIZED|FIFO|PRIORITY|THROTTLE
  is_fallback        INTEGER NOT NULL DEFAULT 0,
  input_snapshot_id  TEXT NOT NULL,
  constraints_digest TEXT NOT NULL,
  execution_set_hash TEXT NOT NULL,
  trace_digest       TEXT NOT NULL,
  candidate_count    INTEGER NOT NULL DEFAULT 0,
  selected_count     INTEGER NOT NULL DEFAULT 0,
  deferred_count     INTEGER NOT NULL DEFAULT 0,
  objective_metrics  TEXT NOT NULL,
  created_at         TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_lsm_runs_date ON LsmRuns(business_date, created_at);

-- ---------------------------------------------------------------- HTLC / GTID / FX

CREATE TABLE IF NOT EXISTS HtlcContracts (
  htlc_id                    TEXT    PRIMARY KEY,
  txid                       TEXT    NOT NULL UNIQUE,
  state                      TEXT    NOT NULL,     -- HtlcState
  hashlock                   TEXT    NOT NULL,     -- SHA-256 hex
  timelock                   TEXT    NOT NULL,     -- RFC3339 (outer, ZC side)
  amount_value               INTEGER NOT NULL,
  payer_bank_id              TEXT    NOT NULL,
  payee_bank_id              TEXT    NOT NULL,
  secret_verified            INTEGER NOT NULL DEFAULT 0,
  authority_recheck_required INTEGER NOT NULL DEFAULT 0,
  version                    INTEGER NOT NULL DEFAULT 0,
  created_at                 TEXT    NOT NULL,
  updated_at                 TEXT    NOT NULL,
  cross_chain_source         TEXT,
  onchain_timelock           TEXT,                 -- strictly before timelock
  onchain_lock_ref           TEXT,
  onchain_lock_proof_json    TEXT,
  onchain_release_proof_json TEXT,
  condition_template_id      TEXT,
  onchain_min_confirmations  INTEGER NOT NULL DEFAULT 0,
  onchain_min_watchers       INTEGER NOT NULL DEFAULT 1,
  condition_expr_json        TEXT,
  onchain_chain_class        TEXT,                 -- PUBLIC|PRIVATE|PERMISSIONED
  onchain_crypto_suite       TEXT,
  onchain_quantum_risk       TEXT,                 -- VULNERABLE|RESISTANT|UNKNOWN
  onchain_finality_class     TEXT,                 -- PROBABILISTIC|DETERMINISTIC
  FOREIGN KEY (txid) REFERENCES Transactions(txid)
);

CREATE TABLE IF NOT EXISTS GtidTransactions (
  gtid               TEXT    PRIMARY KEY,
  state              TEXT    NOT NULL,             -- GtidState
  initiator_bank_id  TEXT    NOT NULL,
  total_amount       INTEGER NOT NULL,
  leg_count          INTEGER NOT NULL,
  legs_ready_count   INTEGER NOT NULL DEFAULT 0,   -- dashboard snapshot only
  legs_settled_count INTEGER NOT NULL DEFAULT 0,   -- dashboard snapshot only
  expires_at         TEXT,
  version            INTEGER NOT NULL DEFAULT 0,
  created_at         TEXT    NOT NULL,
  updated_at         TEXT    NOT NULL,
  mandate_id         TEXT
);

CREATE TABLE IF NOT EXISTS GtidLegs (
  leg_id         TEXT    PRIMARY KEY,
  gtid           TEXT    NOT NULL,
  txid           TEXT,
  role           TEXT    NOT NULL,                 -- PAYER|PAYEE
  bank_id        TEXT    NOT NULL,
  account_hash   TEXT    NOT NULL,
  amount_value   INTEGER NOT NULL,
  state          TEXT    NOT NULL,                 -- LegState
  bank_proof_ref TEXT,                             -- JSON
  expires_at     TEXT,
  version        INTEGER NOT NULL DEFAULT 0,
  created_at     TEXT    NOT NULL,
  updated_at     TEXT    NOT NULL,
  leg_currency   TEXT    NOT NULL DEFAULT 'JPY',
  origin_leg_id  TEXT,
  FOREIGN KEY (gtid) REFERENCES GtidTransactions(gtid),
  FOREIGN KEY (txid) REFERENCES Transactions(txid)
);
CREATE INDEX IF NOT EXISTS idx_legs_gtid ON GtidLegs(gtid);
CREATE INDEX IF NOT EXISTS idx_legs_txid ON GtidLegs(txid);

CREATE TABLE IF NOT EXISTS FxQuotes (
  quote_id      TEXT    PRIMARY KEY,             -- 'FXQ-<uuid>'
  fxp_bank_id   TEXT    NOT NULL,
  from_currency TEXT    NOT NULL,
  to_currency   TEXT    NOT NULL,
  rate          INTEGER NOT NULL,                -- to/from x RATE_SCALE(1e8)
  min_amount    INTEGER NOT NULL DEFAULT 0,
  max_amount    INTEGER,                         -- NULL = unlimited
  valid_from    TEXT    NOT NULL,
  valid_to      TEXT    NOT NULL,
  status        TEXT    NOT NULL DEFAULT 'ACTIVE', -- ACTIVE|WITHDRAWN
  created_at    TEXT    NOT NULL,
  updated_at    TEXT    NOT NULL,
  version       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS idx_fxq_pair ON FxQuotes(from_currency, to_currency, status);
CREATE INDEX IF NOT EXISTS idx_fxq_fxp  ON FxQuotes(fxp_bank_id, status);

CREATE TABLE IF NOT EXISTS FxTransfers (
  gtid           TEXT    PRIMARY KEY,
  from_currency  TEXT    NOT NULL,
  to_currency    TEXT    NOT NULL,
  amount_from    INTEGER NOT NULL,
  amount_to      INTEGER NOT NULL,
  effective_rate INTEGER NOT NULL,
  hashlock       TEXT    NOT NULL,
  route_json     TEXT    NOT NULL,
  quote_ids      TEXT    NOT NULL,               -- comma-joined
  status         TEXT    NOT NULL DEFAULT 'INITIATED', -- INITIATED|LOCKED|SETTLING|SETTLED|REFUNDED
  created_at     TEXT    NOT NULL,
  updated_at     TEXT    NOT NULL
);

CREATE TABLE IF NOT EXISTS FxLegLocks (
  gtid              TEXT    NOT NULL,
  leg_index         INTEGER NOT NULL,
  currency          TEXT    NOT NULL,
  amount            INTEGER NOT NULL,
  from_bank_id      TEXT    NOT NULL,
  from_account_hash TEXT    NOT NULL,
  to_bank_id        TEXT    NOT NULL,
  to_account_hash   TEXT    NOT NULL,
  hashlock          TEXT    NOT NULL,
  timelock          TEXT    NOT NULL,
  state             TEXT    NOT NULL DEFAULT 'LOCKED', -- LOCKED|CLAIMED|REFUNDED
  created_at        TEXT    NOT NULL,
  updated_at        TEXT    NOT NULL,
  version           INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (gtid, leg_index),
  FOREIGN KEY (gtid) REFERENCES FxTransfers(gtid)
);
CREATE INDEX IF NOT EXISTS idx_fxleglocks_state ON FxLegLocks(state, timelock);

-- ---------------------------------------------------------------- cases / audit / misc

CREATE TABLE IF NOT EXISTS Cases (
  case_id          TEXT PRIMARY KEY,
  related_txid     TEXT,
  related_gtid     TEXT,
  state            TEXT NOT NULL DEFAULT 'OPEN',  -- OPEN|IN_PROGRESS|RESOLVED|ESCALATED
  reason_code      TEXT NOT NULL,
  description      TEXT,
  opened_by        TEXT NOT NULL,                 -- ZC|BANK|OPS
  sla_deadline     TEXT,                          -- always set by OpenCase
  evidence_refs    TEXT,                          -- JSON array
  cause_key        TEXT,                          -- 'CAUSE:{cause_party_id|detection_path}:{reason_code}'
  cause_party_id   TEXT,
  detection_path   TEXT,
  occurrence_count INTEGER NOT NULL DEFAULT 1,    -- transactions, not detections
  last_occurred_at TEXT,
  escalated_at     TEXT,
  last_notified_at TEXT,
  resolved_at      TEXT,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_case_txid  ON Cases(related_txid);
CREATE INDEX IF NOT EXISTS idx_case_sla   ON Cases(state, sla_deadline);
CREATE INDEX IF NOT EXISTS idx_case_cause ON Cases(cause_key, state);

CREATE TABLE IF NOT EXISTS CaseRelatedTransactions (
  case_id      TEXT NOT NULL,
  link_key     TEXT NOT NULL,                     -- related_txid ?? related_gtid
  related_txid TEXT,
  related_gtid TEXT,
  linked_at    TEXT NOT NULL,
  PRIMARY KEY (case_id, link_key),
  FOREIGN KEY (case_id) REFERENCES Cases(case_id)
);
CREATE INDEX IF NOT EXISTS idx_case_rel_txid ON CaseRelatedTransactions(related_txid);
CREATE INDEX IF NOT EXISTS idx_case_rel_gtid ON CaseRelatedTransactions(related_gtid);

CREATE TABLE IF NOT EXISTS AccessAuditLog (
  access_id    TEXT PRIMARY KEY,
  occurred_at  TEXT NOT NULL,
  subject_type TEXT NOT NULL,                     -- OPERATOR|PARTICIPANT|UNIDENTIFIED
  subject_id   TEXT,
  purpose_code TEXT,                              -- P01..P07; NULL = refused
  resource     TEXT NOT NULL,
  decision     TEXT NOT NULL,                     -- PERMIT|DENY
  reason_code  TEXT,
  export_ref   TEXT
);
CREATE INDEX IF NOT EXISTS idx_access_audit_time    ON AccessAuditLog(occurred_at);
CREATE INDEX IF NOT EXISTS idx_access_audit_subject ON AccessAuditLog(subject_type, subject_id, occurred_at);

-- zcgw (issue 10): one row per participant and violation window. The first
-- DataAccessViolationDetected of a window goes on the GLOBAL chain (log_id);
-- later ones only count here, so junk signature headers cannot grow the
-- chain without bound. Every refused request still has its AccessAuditLog row.
CREATE TABLE IF NOT EXISTS AccessViolationWindows (
  bank_id       TEXT    NOT NULL,
  window_start  TEXT    NOT NULL,                 -- RFC3339 UTC
  violations    INTEGER NOT NULL,
  first_at      TEXT    NOT NULL,
  first_sample  TEXT    NOT NULL,                 -- JSON {key_id,path,method,cause,request_id}
  last_at       TEXT    NOT NULL,
  last_sample   TEXT    NOT NULL,
  log_id        TEXT,                             -- the window's FinalityLog entry
  PRIMARY KEY (bank_id, window_start)
);

CREATE TABLE IF NOT EXISTS Vault (
  vault_ref    TEXT    PRIMARY KEY,
  txid         TEXT,
  data_type    TEXT    NOT NULL,                  -- AML_EVAL|PII|RISK_HINT|HTLC_PREIMAGE
  payload_json TEXT    NOT NULL,
  expires_at   TEXT    NOT NULL,
  is_evicted   INTEGER NOT NULL DEFAULT 0,
  created_at   TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_vault_expires ON Vault(expires_at, is_evicted);

CREATE TABLE IF NOT EXISTS PsprRegistry (
  pspr_ref         TEXT PRIMARY KEY,
  payee_bank_id    TEXT NOT NULL,
  account_hash     TEXT NOT NULL,
  capability_state TEXT NOT NULL DEFAULT 'ACTIVE', -- ACTIVE|SUSPENDED|REVOKED
  digest           TEXT NOT NULL,
  expires_at       TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  revoked_at       TEXT
);

CREATE TABLE IF NOT EXISTS RtpRequests (
  rtp_id             TEXT    PRIMARY KEY,
  payee_bank_id      TEXT    NOT NULL,
  payer_bank_id      TEXT    NOT NULL,
  amount_value       INTEGER NOT NULL,
  state              TEXT    NOT NULL DEFAULT 'CREATED', -- CREATED|NOTIFIED|ACCEPTED|TX_CREATED|COMPLETED|DECLINED|EXPIRED|FAILED
  attempt_count      INTEGER NOT NULL DEFAULT 0,
  max_attempts       INTEGER NOT NULL DEFAULT 3,
  linked_txid        TEXT,
  expires_at         TEXT    NOT NULL,
  created_at         TEXT    NOT NULL,
  updated_at         TEXT    NOT NULL,
  payee_name         TEXT,
  description        TEXT,
  edi_ref            TEXT,
  notified_at        TEXT,
  linked_txid_new    TEXT,
  payer_account_id   TEXT,
  response_type      TEXT,
  responded_at       TEXT,
  payee_account_hash TEXT
);

CREATE TABLE IF NOT EXISTS IdempotencyKeys (
  key           TEXT PRIMARY KEY,
  status        TEXT NOT NULL DEFAULT 'PROCESSING', -- PROCESSING|DONE
  response_body TEXT,
  created_at    TEXT NOT NULL,
  updated_at    TEXT,
  request_hash  TEXT                                -- sha256hex(body); NULL = no body comparison
);

-- ---------------------------------------------------------------- system mode

-- SystemMode: the coordinator's read-only degradations (spec 000 ch. 6).
-- One row per mode flag; the two flags are independent. The effective mode
-- is NORMAL when no flag is active. Only coordinator/sysmode writes it:
-- QUORUM_LOSS_READONLY by ReconcileQuorum, BCP_READONLY by the operator.
CREATE TABLE IF NOT EXISTS SystemMode (
  mode       TEXT    PRIMARY KEY CHECK (mode IN ('QUORUM_LOSS_READONLY', 'BCP_READONLY')),
  active     INTEGER NOT NULL DEFAULT 0 CHECK (active IN (0, 1)),
  reason     TEXT,                              -- why it was last set/cleared
  actor      TEXT,                              -- 'SYSTEM' (quorum) or the operator id (BCP)
  detail     TEXT,                              -- JSON, e.g. {"replicas_up":1,"replicas_configured":3}
  version    INTEGER NOT NULL DEFAULT 0,
  changed_at TEXT                               -- RFC3339 of the last change; NULL = never
);
INSERT OR IGNORE INTO SystemMode (mode, active) VALUES ('QUORUM_LOSS_READONLY', 0);
INSERT OR IGNORE INTO SystemMode (mode, active) VALUES ('BCP_READONLY', 0);

-- ParameterLedger: the current value of each PR-* parameter an operator
-- changed (spec 002 §12.7-§12.9; coordinator/params declares the
-- parameters, their bounds and defaults: a parameter without a row has its
-- default). Only params.Ledger.Set writes it, a guarded update whose
-- ParameterChanged entry on the GLOBAL chain (old, new, evidence_ref,
-- reason, who) commits in the same transaction; the chain is the history.
CREATE TABLE IF NOT EXISTS ParameterLedger (
  name         TEXT    PRIMARY KEY,               -- 'PR-HV-THRESHOLD', ...
  value        INTEGER NOT NULL,                  -- JPY, whole seconds or a count (params.Kind)
  version      INTEGER NOT NULL DEFAULT 1,        -- +1 per change
  evidence_ref TEXT    NOT NULL,                  -- the change's evidence (§12.7)
  reason       TEXT    NOT NULL,
  changed_by   TEXT    NOT NULL,                  -- the operator
  changed_at   TEXT    NOT NULL,                  -- RFC3339 UTC
  log_id       TEXT    NOT NULL                   -- the GLOBAL-chain FinalityLog entry of the change
);

-- ---------------------------------------------------------------- orchestrator (zcgw, issue 5)

-- OrchestratorQueue: the orchestrator's durable work items (spec 000 ch. 2
-- queue retry policy). One row per (kind, txid): DRIVE moves a transfer
-- along its lane (through to credit-notify/debit-settled after SETTLED),
-- BATCH marks a BULK/DEFERRED transfer waiting for its batch window (status
-- WAITING until the batch-window job claims it). next_attempt_at is when a
-- READY item is due and, while CLAIMED, when its lease expires (so one
-- index serves both); claims are guarded UPDATEs on status and
-- next_attempt_at.
CREATE TABLE IF NOT EXISTS OrchestratorQueue (
  item_id             TEXT    PRIMARY KEY,               -- '{kind}:{txid}'
  kind                TEXT    NOT NULL,                  -- DRIVE|BATCH|REFUND
  txid                TEXT    NOT NULL,
  lane                TEXT    NOT NULL,
  status              TEXT    NOT NULL DEFAULT 'READY',  -- READY|CLAIMED|DONE|ACKED|WAITING
  attempts            INTEGER NOT NULL DEFAULT 0,        -- failed attempts since the last success
  next_attempt_at     TEXT    NOT NULL,                  -- due time (READY) or lease expiry (CLAIMED)
  claimed_by          TEXT,
  rerun               INTEGER NOT NULL DEFAULT 0,        -- requeue requested while CLAIMED
  last_error_code     TEXT,
  last_error_category TEXT,
  last_error          TEXT,
  case_id             TEXT,                              -- Case opened when the item was acked
  created_at          TEXT    NOT NULL,
  updated_at          TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_oq_due  ON OrchestratorQueue(status, next_attempt_at);
CREATE INDEX IF NOT EXISTS idx_oq_txid ON OrchestratorQueue(txid);

-- OrchestratorTransfers: per-transfer progress the Transactions columns do
-- not hold: the accepted request, check results, the payer bank's hold
-- reference, consecutive execution failures, notification times.
CREATE TABLE IF NOT EXISTS OrchestratorTransfers (
  txid                 TEXT    PRIMARY KEY,
  issuer_bank_id       TEXT    NOT NULL,
  request_json         TEXT    NOT NULL,                 -- the accepted PaymentInitiated
  authority_result     TEXT,                             -- OK|NG (authority-check)
  name_result          TEXT,                             -- MATCH|MISMATCH (name-check)
  bank_reservation_ref TEXT,                             -- reserve-funds reservation_ref
  exec_failures        INTEGER NOT NULL DEFAULT 0,       -- consecutive BANK_ERROR/BANK_TIMEOUT on execution
  credit_notified_at   TEXT,
  debit_settled_at     TEXT,
  created_at           TEXT    NOT NULL,
  updated_at           TEXT    NOT NULL
);

-- OrchestratorRequests: the body of a ZC->bank command whose body holds a
-- value derived when it is first sent (execute-debit's execution_deadline,
-- debit-settled's settled_at), recorded in the commit that decides to send
-- it. Every retry under the same request_id sends this body byte for byte,
-- so the bank answers a replay, never IDEMPOTENCY_KEY_CONFLICT.
CREATE TABLE IF NOT EXISTS OrchestratorRequests (
  request_id TEXT PRIMARY KEY,                           -- TX:{txid}:{command}:ZC
  txid       TEXT NOT NULL,
  command    TEXT NOT NULL,                              -- bankapi command
  body       TEXT NOT NULL,                              -- the JSON body as first sent
  created_at TEXT NOT NULL
);

-- ReversalRecords: the reversal (refund) of a transfer that ended in
-- FAILED_EXECUTION after its payer was debited (spec 004 POST
-- /api/reversals; 003 names ReversalRecords.status among the entities whose
-- history EntityStateLog keeps, entity_type 'REVERSAL'). One full reversal
-- per transfer (txid UNIQUE): a second request replays this row. The
-- compensate command sent under request_id is recorded in
-- OrchestratorRequests in the decision commit.
CREATE TABLE IF NOT EXISTS ReversalRecords (
  reversal_id    TEXT    PRIMARY KEY,                    -- 'REV-{txid}'
  txid           TEXT    NOT NULL UNIQUE,
  payer_bank_id  TEXT    NOT NULL,
  amount_value   INTEGER NOT NULL,
  amount_currency TEXT   NOT NULL,
  status         TEXT    NOT NULL,                       -- REQUESTED|COMPLETED|NO_DEBIT
  request_id     TEXT    NOT NULL,                       -- TX:{txid}:compensate:ZC
  proof_source   TEXT    NOT NULL,                       -- EXEC_CREDIT_FAILED|OPERATOR_EVIDENCE
  evidence_ref   TEXT,
  requested_by   TEXT    NOT NULL,
  note           TEXT,
  bank_result    TEXT,                                   -- the payer bank's answer (JSON)
  created_at     TEXT    NOT NULL,
  updated_at     TEXT    NOT NULL
);

-- SettlementPositions: each bank's settlement balance at a venue: 'ZC'
-- (the coordinator's net positions of the immediate lanes, settled later
-- by DNS) and 'BOJ' (the simulated RTGS current account used by
-- HIGH_VALUE). Every settlement moves the payer -amount and the payee
-- +amount in one transaction, so each venue sums to a constant.
CREATE TABLE IF NOT EXISTS SettlementPositions (
  bank_id    TEXT    NOT NULL,
  venue      TEXT    NOT NULL,                           -- ZC|BOJ
  currency   TEXT    NOT NULL DEFAULT 'JPY',
  balance    INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT    NOT NULL,
  PRIMARY KEY (bank_id, venue, currency)
);

-- ---------------------------------------------------------------- signing (zcgw, issue 5)

-- KeyRegistry: public keys that sign messages (spec 002 §12.6.3, 004 ingress
-- signature headers and 照会の認可). Spec 003 names the table but does not
-- define it; the columns follow what 002/004 read from it. owner_type ZC
-- signs ZC->bank ingress; PARTICIPANT signs a bank's queries (owner_ref =
-- bank_id). revoked_at is not retroactive: a signature whose time is
-- before revoked_at stays valid. Only coordinator/signing writes it.
CREATE TABLE IF NOT EXISTS KeyRegistry (
  key_id      TEXT PRIMARY KEY,                   -- 'KEY-...'
  owner_type  TEXT NOT NULL,                      -- ZC|PARTICIPANT|EXTERNAL_RAIL|ATTESTER
  owner_ref   TEXT NOT NULL,                      -- 'ZC' or the bank_id
  alg         TEXT NOT NULL DEFAULT 'Ed25519',
  public_key  TEXT NOT NULL,                      -- base64 (std) of the raw public key
  status      TEXT NOT NULL DEFAULT 'ACTIVE',     -- ACTIVE|INACTIVE
  valid_from  TEXT NOT NULL,                      -- RFC3339
  valid_to    TEXT,                               -- RFC3339; NULL = open-ended
  revoked_at  TEXT,                               -- RFC3339; NULL = not revoked
  created_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_keyreg_owner ON KeyRegistry(owner_type, owner_ref, status);

-- ---------------------------------------------------------------- event outbox (zcgw, issue 7)

-- EventOutbox: one row per FinalityLog entry, inserted by the entry's own
-- transaction (finality.Log.AfterAppend set by outbox/events.Install), so an
-- entry is logged and queued for publication together or not at all.
-- outbox_seq is the entry's FinalityLog event_seq (global order); event_seq
-- is the I/F event_seq of spec 002 §12.5 (producer ZC x aggregate): 1, 2,
-- 3 ... per chain, never reused. message_json is the whole published event
-- (§12.2 header + body). A row is never updated: whether it was sent is
-- EventPublisher.acked_seq. Rows are never deleted: the per-chain counter
-- reads the chain's last row.
CREATE TABLE IF NOT EXISTS EventOutbox (
  outbox_seq   INTEGER PRIMARY KEY,                     -- = FinalityLog.event_seq
  log_id       TEXT    NOT NULL,                        -- FinalityLog.log_id = message_id
  chain_id     TEXT    NOT NULL,                        -- COALESCE(txid, gtid, 'GLOBAL'); the Kafka key
  event_seq    INTEGER NOT NULL,                        -- per-chain I/F seq (002 §12.5)
  event_type   TEXT    NOT NULL,
  message_json TEXT    NOT NULL,                        -- the Kafka value
  headers      TEXT    NOT NULL,                        -- the Kafka headers, k=v&k=v (values query-escaped)
  created_at   TEXT    NOT NULL                         -- = FinalityLog.occurred_at
);
CREATE UNIQUE INDEX IF NOT EXISTS idx_evo_chain_seq ON EventOutbox(chain_id, event_seq);

-- EventPublisher: the Kafka publisher's durable cursor and lease (issue 14
-- item 5, issue 16 item 3; docs/events.md). acked_seq: every EventOutbox
-- row with outbox_seq <= acked_seq was acknowledged by the broker (set only
-- after the acknowledgement, by the lease holder, with a guarded UPDATE
-- naming owner and token). owner: the publisher holding the lease
-- (coordinator/procid Owner form, '' when released); token grows with every
-- acquisition (fencing); lease_until: the lease's expiry (RFC3339 UTC).
CREATE TABLE IF NOT EXISTS EventPublisher (
  stream       TEXT    PRIMARY KEY,                     -- 'events': the one outbox stream
  acked_seq    INTEGER NOT NULL DEFAULT 0,
  acked_at     TEXT    NOT NULL DEFAULT '',             -- when acked_seq last moved
  owner        TEXT    NOT NULL DEFAULT '',
  token        INTEGER NOT NULL DEFAULT 0,
  lease_until  TEXT    NOT NULL DEFAULT ''
);
INSERT OR IGNORE INTO EventPublisher (stream) VALUES ('events');

-- ---------------------------------------------------------------- bank file drop (zcgw, issue 7)

-- FileDrops: one row per Zengin file taken from a bank's inbound folder
-- (gateway/filedrop, docs/filedrop.md). drop_id is derived from the
-- processing name the file was claimed under, so a restart finds the row of
-- a file it finds in processing/. status: APPLYING (valid, records being
-- submitted; applied_through is the file record number up to which every
-- data record is accepted), ACCEPTED (every record submitted, waiting for
-- the batch window), RESULTED (result file written to outbound), REJECTED
-- (invalid: nothing applied, error report in the error folder), DUPLICATE
-- (same SHA-256 as duplicate_of: not applied). Only gateway/filedrop writes it.
CREATE TABLE IF NOT EXISTS FileDrops (
  drop_id         TEXT    PRIMARY KEY,                 -- 'FD-' + processing name hash
  bank_id         TEXT    NOT NULL,                    -- the dropping (payer) bank
  file_name       TEXT    NOT NULL,                    -- name as dropped
  processing_name TEXT    NOT NULL,                    -- name in processing/, processed/, error/
  file_sha256     TEXT    NOT NULL,                    -- hex SHA-256 of the content
  file_size       INTEGER NOT NULL,
  status          TEXT    NOT NULL,                    -- APPLYING|ACCEPTED|RESULTED|REJECTED|DUPLICATE
  duplicate_of    TEXT,                                -- drop_id of the original (DUPLICATE)
  record_count    INTEGER NOT NULL DEFAULT 0,          -- data records
  total_amount    INTEGER NOT NULL DEFAULT 0,          -- sum of 振込金額 (JPY)
  applied_through INTEGER NOT NULL DEFAULT 0,          -- file record number, see above
  refused_count   INTEGER NOT NULL DEFAULT 0,          -- data records the coordinator refused at submit
  error_count     INTEGER NOT NULL DEFAULT 0,          -- validation errors (REJECTED)
  report_name     TEXT,                                -- error report in error/ (REJECTED)
  result_name     TEXT,                                -- result file in outbound/ (RESULTED)
  received_at     TEXT    NOT NULL,
  updated_at      TEXT    NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS idx_filedrops_sha256 ON FileDrops(file_sha256) WHERE status NOT IN ('DUPLICATE', 'REJECTED');
CREATE INDEX IF NOT EXISTS idx_filedrops_status ON FileDrops(status, bank_id);

-- FileDropRefusals: data records of an applied file that the coordinator
-- refused at submit (a limit, an inactive participant): they get no
-- Transactions row and a non-zero result code in the result file.
CREATE TABLE IF NOT EXISTS FileDropRefusals (
  drop_id     TEXT    NOT NULL,                        -- -> FileDrops
  record_no   INTEGER NOT NULL,                        -- file record number
  reason_code TEXT    NOT NULL,                        -- spec 004 catalog code
  message     TEXT    NOT NULL,
  created_at  TEXT    NOT NULL,
  PRIMARY KEY (drop_id, record_no)
);

-- AccountVerifications: one row per account verification ZC asked a bank
-- for (POST /api/account-verify -> the bank's account-verify ingress; spec
-- 004 names the table, 003 Transactions.verification_id refers to it).
-- The bank never returns the holder's stored name: name_provided is what
-- the requester gave, and the result and score are the bank's answer.
CREATE TABLE IF NOT EXISTS AccountVerifications (
  verification_id     TEXT    PRIMARY KEY,              -- 'V-{uuid}'
  requester_bank_id   TEXT    NOT NULL,                 -- the participant (or 'OPS') that asked
  target_bank_id      TEXT    NOT NULL,
  target_account_hash TEXT    NOT NULL,
  name_provided       TEXT,                             -- the name to verify, as given
  result              TEXT    NOT NULL,                 -- MATCHED|MISMATCHED|NOT_FOUND
  match_score         REAL    NOT NULL,
  fraud_warning       INTEGER NOT NULL DEFAULT 0,
  request_id          TEXT    NOT NULL,
  created_at          TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_account_verifications_target ON AccountVerifications(target_bank_id, target_account_hash);
-- ---------------------------------------------------------------- programmability (zcgw, issue 17)

-- ConditionTemplate, Attestation and Mandate (spec 000 ch. 11): 003 names
-- them (the consolidated file's history, Transactions.mandate_id "FK ->
-- Mandate", HtlcContracts.condition_template_id) without defining them;
-- the columns follow what 000 §11.2 and the 004 catalog read from them
-- (docs/programmability.md). Only coordinator/conditions writes the first
-- two, only coordinator/mandate the third.

-- ConditionTemplate: the whitelist of conditions. allowed_attester_scope
-- is a JSON array of attester operators (KeyRegistry.owner_ref of
-- owner_type ATTESTER keys); '[]' means nobody may attest, which is the
-- case of every ledger-predicate template (ledger_predicate_json non-NULL:
-- ZC resolves it itself).
CREATE TABLE IF NOT EXISTS ConditionTemplate (
  template_id             TEXT    PRIMARY KEY,
  status                  TEXT    NOT NULL DEFAULT 'ACTIVE',  -- ACTIVE|INACTIVE
  description             TEXT,
  allowed_attester_scope  TEXT    NOT NULL DEFAULT '[]',      -- JSON array of operators
  min_attester_quorum     INTEGER NOT NULL DEFAULT 1,         -- distinct operators needed
  attestation_ttl_seconds INTEGER NOT NULL DEFAULT 3600,      -- freshness (default 60 min)
  ledger_predicate_json   TEXT,                               -- TX_/GTID_REACHED_STATE, TIME_AFTER/BEFORE
  created_at              TEXT    NOT NULL,
  updated_at              TEXT    NOT NULL
);

-- Attestation: one verified, signed statement of an external attester.
-- The statement itself is never kept: statement_hash and verified_result
-- only. (key_id, nonce) and attestation_id are each used once; rows are
-- never updated.
CREATE TABLE IF NOT EXISTS Attestation (
  attestation_id  TEXT PRIMARY KEY,
  template_id     TEXT NOT NULL,                  -- -> ConditionTemplate
  subject         TEXT NOT NULL,                  -- what it is about: HTLC id, txid, GTID ...
  statement_hash  TEXT NOT NULL,                  -- SHA-256 hex
  verified_result TEXT NOT NULL,                  -- PASS|FAIL
  key_id          TEXT NOT NULL,                  -- -> KeyRegistry (owner_type ATTESTER)
  attester_ref    TEXT NOT NULL,                  -- the key's owner_ref: the operator quorums count
  nonce           TEXT NOT NULL,
  occurred_at     TEXT NOT NULL,                  -- when the attester signed (RFC3339 UTC)
  recorded_at     TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS idx_attestation_key_nonce ON Attestation(key_id, nonce);
CREATE INDEX IF NOT EXISTS idx_attestation_subject ON Attestation(template_id, subject, occurred_at);

-- Mandate: a payer's standing, delegable authorisation. A sub-mandate
-- (parent_mandate_id) can only narrow its parent: max_amount no higher,
-- purposes and lanes a subset, validity inside the parent's. '[]' in
-- allowed_purposes / allowed_lanes means any. revoked_at is set once and
-- is not retroactive.
CREATE TABLE IF NOT EXISTS Mandate (
  mandate_id        TEXT    PRIMARY KEY,           -- 'MANDATE-...'
  parent_mandate_id TEXT,                          -- -> Mandate; NULL for a root
  payer_bank_id     TEXT    NOT NULL,              -- the grantor bank: its transfers may cite it
  grantee_ref       TEXT    NOT NULL,              -- who acts under it (an agent, a service)
  status            TEXT    NOT NULL DEFAULT 'ACTIVE', -- ACTIVE|REVOKED (EntityStateLog 'MANDATE')
  max_amount        INTEGER,                       -- per transfer (JPY minor units); NULL = no limit
  allowed_purposes  TEXT    NOT NULL DEFAULT '[]', -- JSON array of purposes
  allowed_lanes     TEXT    NOT NULL DEFAULT '[]', -- JSON array of lanes
  valid_from        TEXT    NOT NULL,
  valid_to          TEXT,                          -- exclusive; NULL = open-ended
  revoked_at        TEXT,
  created_at        TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_mandate_parent ON Mandate(parent_mandate_id);
CREATE INDEX IF NOT EXISTS idx_mandate_payer ON Mandate(payer_bank_id);
