// Package overnight reads, validates and writes the overnight posting file
// zcgw hands to a legacy core for its night batch, and the result file the
// core returns: fixed-length 200-byte records (header, details, trailer),
// CR LF after every record or no separator.
//
// The posting file carries one detail per debit, credit or reversal
// posting, with the zcgw txid and a posting reference the core uses as its
// idempotency key. Its trailer carries the record count, the debit and
// credit counts and totals, and a hash total. The result file answers
// every detail, in the same order, with a result code; its trailer carries
// the same discipline for the postings that were made.
//
// Hash total: the sum over all detail records of the 10-digit number
// branch code (3) followed by account number (7), modulo 10^15. It catches
// a detail posted to the wrong account even when counts and amounts agree.
//
// Reading is streaming and strict, as for formats/zengin: constant memory,
// every error (up to a cap) with record, line, byte offset, field and the
// offending bytes, Validate before applying anything. The package imports
// only formats/fixed, formats/fixedfile and formats/recordio of zcgw and does no I/O beyond
// the reader or writer it is handed.
package overnight
