-- jobs/dns: settlement postings of DNS cycles on the simulated central-bank
-- accounts (SettlementPositions venue 'BOJ'). One row per (cycle, bank):
-- the primary key is what makes a settlement post each bank exactly once,
-- however often settle/resume is re-run. Instants RFC3339 UTC, money minor
-- units. Only jobs/dns writes it.
CREATE TABLE IF NOT EXISTS DnsSettlementPostings (
  cycle_id      TEXT    NOT NULL,
  bank_id       TEXT    NOT NULL,
  currency      TEXT    NOT NULL,
  venue         TEXT    NOT NULL,           -- 'BOJ'
  amount        INTEGER NOT NULL,           -- the net position: >0 credited, <0 debited
  balance_after INTEGER NOT NULL,           -- the account balance after this posting
  posted_at     TEXT    NOT NULL,
  PRIMARY KEY (cycle_id, bank_id)
);
