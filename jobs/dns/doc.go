// Package dns runs deferred net settlement (DNS) cycles (spec 003
// DnsCycles / DnsNetPositions, 004 /internal/dns/*, 000 §5.2 handoffs #1
// and #2): opening a cycle per currency and JST business date (ids
// DNS-{CCY}-YYYYMMDD-NN), the kick that snapshots the cycle's transactions
// and hands them to 'CYCLE:<id>' in one statement and computes each bank's
// net position, the settle that moves the net amounts on the simulated
// central-bank (BOJ) current accounts and hands the transactions back to
// 'ZC', the HOLD when a net debtor lacks funds (igs_mode RINGFENCED, public
// message id DNS_HOLD_{business_date}), the resume once the gap is covered,
// and the intraday cutoff that closes the open cycle and opens the next.
//
// Every operation is one write transaction guarded by a CAS on
// DnsCycles.state, so re-running it (a retried job, a second button press,
// two instances racing) changes nothing. Every cycle fact is appended to
// the cycle's own FinalityLog chain (gtid = cycle id, the spec's 'DNS-'
// chain) with coordinator/finality in the same transaction.
//
// Only kick.go and settle.go write Transactions.owner (the two whitelisted
// bulk handoff sites, lane.DNSKickSite and lane.DNSSettleSite); nothing here
// writes Transactions.state. It imports coordinator packages and
// jobs/scheduler (for its job bodies) only, never gateway, adapter, outbox or
// formats. The simulated central-bank accounts are the SettlementPositions
// rows of venue 'BOJ'; its own table is the posting journal (schema.sql).
package dns
