// Package corebalance reads, validates and writes the core balance file: a
// real-time bank's core writes it in its batch window, one detail per
// account with the account's ledger balance at the file's cutoff, and
// zcgw's end-of-day reconciliation compares it with the shadow ledger in
// one streaming pass (adapter.ReconcileBalanceFile). Fixed-length 100-byte
// records (header, details, trailer), CR LF after every record or no
// separator, like the overnight files (formats/overnight).
//
// The details are sorted by account key (店番, 預金種目, 口座番号, the
// order of formats/coreacct's "BBB-T-NNNNNNN" as text) with no account
// twice, so a reader can merge the file with another list in that order
// holding one account at a time. The trailer carries the detail count, the
// balance total and the hash total (店番 and 口座番号 read as one 10-digit
// number, summed modulo 10^15, as in the overnight files).
//
// Reading is streaming and strict: constant memory, every error (up to a
// cap) with record, line, byte offset, field and the offending bytes. The
// package imports only formats/fixed, formats/fixedfile, formats/recordio and formats/coreacct
// of zcgw and does no I/O beyond the reader or writer it is handed.
package corebalance
