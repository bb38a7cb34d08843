-- zcgw job ledger: the scheduler's own tables, applied by ledger.Open with
-- store.Open to the SAME SQLite file as the coordinator (zc.db under the data
-- folder), next to the coordinator schema. Every statement is idempotent so
-- it is applied on every start. The coordinator schema never references
-- these tables and these never reference coordinator tables.
--
-- Conventions: instants are RFC3339 UTC TEXT (clock.Stamp); business dates
-- are JST 'YYYY-MM-DD'.

-- One row per job instance (Spring Batch's JobInstance): unique per
-- (job, business_date, run_key). run_key is the slot ('daily' for a daily
-- job, 'HH:MM' JST for a repeating job) plus '/rerun-N' for the N-th forced
-- re-run of a completed instance. A restart of a FAILED instance reuses its
-- row (attempts + 1).
CREATE TABLE IF NOT EXISTS JobRuns (
  run_id            INTEGER PRIMARY KEY AUTOINCREMENT,
  job               TEXT    NOT NULL,
  business_date     TEXT    NOT NULL,              -- JST 'YYYY-MM-DD'
  run_key           TEXT    NOT NULL,              -- slot or slot/rerun-N
  slot              TEXT    NOT NULL,              -- 'daily' or 'HH:MM'
  rerun             INTEGER NOT NULL DEFAULT 0,    -- 0 = original instance
  status            TEXT    NOT NULL CHECK (status IN ('STARTED','COMPLETED','FAILED')),
  attempts          INTEGER NOT NULL DEFAULT 1,
  trigger_source    TEXT    NOT NULL,              -- cron|catchup|cli|http|test
  first_started_at  TEXT    NOT NULL,              -- first attempt
  started_at        TEXT    NOT NULL,              -- current/last attempt
  ended_at          TEXT,
  duration_ms       INTEGER,                       -- of the last attempt
  summary           TEXT    NOT NULL DEFAULT '',
  error             TEXT    NOT NULL DEFAULT '',
  holder            TEXT    NOT NULL,              -- lease holder of the last attempt
  fencing_token     INTEGER NOT NULL,              -- its fencing token
  forced_by         TEXT,                          -- forced re-run: who
  force_reason      TEXT,                          --                why
  forced_at         TEXT,                          --                when
  supersedes_run_id INTEGER REFERENCES JobRuns(run_id),
  UNIQUE (job, business_date, run_key)
);
CREATE INDEX IF NOT EXISTS idx_jobruns_job_date ON JobRuns(job, business_date, slot, rerun);
CREATE INDEX IF NOT EXISTS idx_jobruns_status ON JobRuns(job, slot, status, business_date);

-- One row per (run, step). A COMPLETED row is never rewritten: a restart
-- skips it.
CREATE TABLE IF NOT EXISTS JobSteps (
  run_id      INTEGER NOT NULL REFERENCES JobRuns(run_id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,                    -- 1-based order in the job
  step        TEXT    NOT NULL,
  status      TEXT    NOT NULL CHECK (status IN ('STARTED','COMPLETED','FAILED')),
  attempts    INTEGER NOT NULL DEFAULT 1,
  started_at  TEXT    NOT NULL,
  ended_at    TEXT,
  duration_ms INTEGER,
  summary     TEXT    NOT NULL DEFAULT '',
  error       TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, step)
);

-- One row per job: who may run it now. token only ever grows (fencing).
CREATE TABLE IF NOT EXISTS JobLeases (
  job         TEXT    PRIMARY KEY,
  holder      TEXT    NOT NULL,                    -- '' when released
  token       INTEGER NOT NULL,
  acquired_at TEXT    NOT NULL,
  expires_at  TEXT    NOT NULL
);
