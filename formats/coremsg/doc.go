// Package coremsg declares the fixed-length MQ messages (電文) exchanged
// between zcgw's legacy-core adapter and a bank's core banking system, and
// encodes and decodes whole messages.
//
// A message is a 120-byte common header (message type, layout version,
// request id, txid, bank code, timestamp, body length, return code)
// followed by one body. Each core operation has a request (type code ending
// in Q) and a reply (ending in R):
//
//	PSTQ/PSTR  POSTING (debit, credit, reversal)
//	HLDQ/HLDR  HOLD / RELEASE of an amount on an account
//	BALQ/BALR  BALANCE-INQUIRY
//	PSIQ/PSIR  POSTING-STATUS-INQUIRY by posting reference
//	NMCQ/NMCR  NAME-CHECK
//	AVFQ/AVFR  ACCOUNT-VERIFY
//	AMLQ/AMLR  AML-SCREEN
//	NTFQ/NTFR  NOTIFY (incoming credit, request to pay)
//
// Every layout is declared once, as struct tags read by formats/fixed.
// Money is int64 minor units (yen), as packed decimal P(8) (15 digits) or
// signed zoned S9(15) for balances. Messages travel as MQFMT_NONE and are
// converted by the application: Encode and Decode take the record charset
// (EBCDIC290 for a Japanese host, ShiftJIS for an open-systems core);
// packed fields are never transcoded.
//
// Decode is strict: unknown message type, unsupported layout version, a
// body length that does not match the type or the bytes received, any bad
// field, an invalid enumeration or date are typed *fixed.Error values with
// the byte offset from the start of the message. It never panics (fuzzed).
//
// This package imports only formats/fixed and formats/charset of zcgw; it
// does no I/O and reads no clock (callers pass timestamps).
package coremsg
