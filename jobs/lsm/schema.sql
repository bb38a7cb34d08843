-- jobs/lsm: the input snapshot of every LSM run, kept so that the run can
-- be reproduced (spec 001 §14.2): LsmRuns.input_snapshot_id and
-- constraints_digest are the SHA-256 of candidates_json and
-- constraints_json. Written once per snapshot id; only jobs/lsm writes it.
CREATE TABLE IF NOT EXISTS LsmSnapshots (
  snapshot_id      TEXT PRIMARY KEY,     -- 'LSMIN-' + sha256(candidates_json)
  business_date    TEXT NOT NULL,        -- JST YYYY-MM-DD
  window_id        TEXT NOT NULL,
  candidates_json  TEXT NOT NULL,        -- canonical JSON array, by txid
  constraints_json TEXT NOT NULL,        -- canonical JSON object
  created_at       TEXT NOT NULL
);
