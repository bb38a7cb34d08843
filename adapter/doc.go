// Package adapter is the bank-side layer in front of each legacy core: it
// serves the 13 ZC-to-bank ingress commands, keeps a shadow ledger per
// account, queues postings in the outbox and talks to the core over an MQ
// transport (adapter/mq) with fixed-length messages (formats).
//
// It must not import gateway or jobs, and must not write coordinator
// tables: it reaches the coordinator only through its public APIs (for
// example to open a Case).
package adapter
