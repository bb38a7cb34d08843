// Package recordio splits a byte stream into fixed-length records and
// writes them back. A file may carry CR LF after every record or no
// separator at all; anything else (a bare LF or CR, stray bytes between
// records, short, long and truncated records) is reported as a
// *fixed.Error with its byte offset, record number and line, and the
// scanner resynchronises so that one file yields every error.
//
// The Scanner holds one buffer whatever the file size and hands out each
// record as a slice valid until the next call, so reading allocates
// nothing per record.
//
// Stream is the record loop of the format readers built on the Scanner: it
// gathers the errors found while reading one record and hands them over
// instead of the record; Drain is the loop of their validators.
//
// It knows nothing of record contents (zengin, overnight) and imports only
// formats/fixed of zcgw; it does no I/O beyond the reader it is given.
package recordio
