// Package fixedfile is the part shared by the core's fixed-record batch
// files (formats/overnight, formats/corebalance): one header (H), details
// (D) and one trailer (T) of one record length, read with
// formats/recordio. It holds the layout helpers, the decoding helpers
// (field slices, digits, YYYYMMDD dates, YYYYMMDDhhmmss stamps, the hash
// total of 店番+口座番号), the record encoder, the H…D…T checker that
// reports every error as a *fixed.Error naming record, field and offset,
// the trailer comparison, and the streaming Reader and Validate loops.
//
// A format supplies its layouts, its Body (what its header, details and
// trailer must hold, and the totals it keeps) and its decoders; the error
// values, record types and offsets it reports are its own.
//
// It imports only formats/fixed and formats/recordio of zcgw.
package fixedfile
