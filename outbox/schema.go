package outbox

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/store"
)

// Schema is the DDL of the outbox tables. The adapter includes it in the
// schema it passes to store.Open for its own database. It is idempotent.
//
// claim_owner, claim_until and reported_status were added after the first release: an older
// file gains them when New opens it (migrate), and indexes over them are
// created there, not here.
//
// EntityStateLog has the columns of spec 003 (INSERT ONLY); the outbox
// appends one row per status change of a posting (entity_type 'OUTBOX').
const Schema = `
CREATE TABLE IF NOT EXISTS AdapterOutbox (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  ref           TEXT    NOT NULL UNIQUE,
  txid          TEXT    NOT NULL,
  bank          TEXT    NOT NULL,
  account       TEXT    NOT NULL,
  kind          TEXT    NOT NULL CHECK (kind IN ('DEBIT','CREDIT','REVERSAL')),
  amount        INTEGER NOT NULL CHECK (amount > 0),
  reversal_of   TEXT,
  status        TEXT    NOT NULL CHECK (status IN ('PENDING','CLAIMED','APPLIED','BLOCKED','IN_DOUBT','WRITTEN_OFF','IN_FILE')),
  route         TEXT    NOT NULL DEFAULT 'MQ' CHECK (route IN ('MQ','FILE')),
  file_id       TEXT,
  file_seq      INTEGER,
  claim_token   TEXT,
  claimed_at    TEXT,
  claim_owner   TEXT,             -- procid owner "<node>/<epoch>/<worker>" of the claim
  claim_until   TEXT,             -- claimed_at + the claimer's lease (sortable stamp)
  sends         INTEGER NOT NULL DEFAULT 0,
  lookups       INTEGER NOT NULL DEFAULT 0,
  reason_code   TEXT,
  last_error    TEXT,
  core_ref      TEXT,
  case_id       TEXT,
  case_token    TEXT,
  case_claimed_at TEXT,
  created_at    TEXT    NOT NULL,
  updated_at    TEXT    NOT NULL,
  applied_at    TEXT,
  reported_status TEXT            -- the final status (APPLIED/BLOCKED) the PostingReporter last took
);
CREATE INDEX IF NOT EXISTS idx_outbox_status  ON AdapterOutbox(status, id);
CREATE INDEX IF NOT EXISTS idx_outbox_txid    ON AdapterOutbox(txid);
CREATE INDEX IF NOT EXISTS idx_outbox_open    ON AdapterOutbox(bank, account, id)
  WHERE status IN ('PENDING','CLAIMED','IN_DOUBT','IN_FILE');
CREATE INDEX IF NOT EXISTS idx_outbox_route   ON AdapterOutbox(bank, route, status, id);
CREATE UNIQUE INDEX IF NOT EXISTS idx_outbox_file ON AdapterOutbox(file_id, file_seq) WHERE file_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_outbox_nocase  ON AdapterOutbox(id)
  WHERE status = 'BLOCKED' AND case_id IS NULL;

CREATE TABLE IF NOT EXISTS EntityStateLog (
  log_id       TEXT    PRIMARY KEY,
  entity_type  TEXT    NOT NULL,
  entity_id    TEXT    NOT NULL,
  event_type   TEXT    NOT NULL,
  state_from   TEXT,
  state_to     TEXT    NOT NULL,
  reason_code  TEXT,
  actor        TEXT,
  payload_json TEXT,
  occurred_at  TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_esl_entity   ON EntityStateLog(entity_type, entity_id, occurred_at);
CREATE INDEX IF NOT EXISTS idx_esl_occurred ON EntityStateLog(occurred_at);

-- Who drains this outbox (one bank's) now: one node at a time, so that
-- several nodes on one shared database do not contend for the same heads
-- (outbox/lease.go, docs/storage.md "Several nodes"). token grows at every
-- change of holder; holder '' is released.
CREATE TABLE IF NOT EXISTS OutboxDrainLease (
  name       TEXT    PRIMARY KEY,
  holder     TEXT    NOT NULL,     -- procid owner "<node>/<epoch>/<worker>", '' when released
  token      INTEGER NOT NULL,
  until      TEXT    NOT NULL,     -- sortable stamp: the holder's lease end
  changed_at TEXT    NOT NULL
);
`

// migrate adds the claim owner and lease columns and reported_status to an
// outbox table created before they existed, and their indexes.
func migrate(ctx context.Context, db *store.DB) error {
	err := db.Write(ctx, func(tx *store.Tx) error {
		for _, col := range []string{"claim_owner", "claim_until"} {
			have, err := store.ColumnExists(ctx, tx, "AdapterOutbox", col)
			if err != nil {
				return err
			}
			if !have {
				if _, err := tx.ExecContext(ctx, `ALTER TABLE AdapterOutbox ADD COLUMN `+col+` TEXT`); err != nil {
					return err
				}
			}
		}
		have, err := store.ColumnExists(ctx, tx, "AdapterOutbox", "reported_status")
		if err != nil {
			return err
		}
		if !have {
			// Postings finished before reports existed are not reported:
			// they are history, not news.
			if _, err := tx.ExecContext(ctx, `ALTER TABLE AdapterOutbox ADD COLUMN reported_status TEXT`); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE AdapterOutbox SET reported_status = status WHERE status IN ('APPLIED', 'BLOCKED')`); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS idx_outbox_unreported ON AdapterOutbox(id)
			WHERE status IN ('APPLIED', 'BLOCKED') AND reported_status IS NOT status`); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS idx_outbox_claims ON AdapterOutbox(claim_until) WHERE status = 'CLAIMED'`)
		return err
	})
	if err != nil {
		return fmt.Errorf("outbox: migrate schema: %w", err)
	}
	return nil
}
