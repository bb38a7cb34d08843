// Package formats holds the wire and file formats zcgw exchanges with
// banks and their cores:
//
//   - formats/fixed: the fixed-length record codec (layouts, X/9/S9/K/P
//     fields, typed positional errors);
//   - formats/charset: Shift_JIS, EBCDIC CP037/CP1047 and Japanese EBCDIC
//     katakana (CCSID 290/930 SBCS);
//   - formats/recordio: splitting a byte stream into fixed-length records
//     (CRLF or no separator), reporting stray bytes by offset;
//   - formats/zengin: Zengin (全銀協) 120-byte files;
//   - formats/coremsg: the core MQ messages (電文);
//   - formats/fixedfile: what the core's H…D…T batch files share (layout
//     helpers, the file checker, trailer totals, Reader and Validate);
//   - formats/overnight: overnight posting files and their result files;
//   - formats/corebalance: the core balance file (EOD reconciliation);
//   - formats/docgen: docs/formats/*.md generated from the layouts;
//   - formats/filetool: the logic of `zcgw files describe|validate|convert`.
//
// It must not import coordinator, adapter, gateway or jobs: formats are
// pure encode/decode/validate with no I/O beyond the readers and writers
// it is handed.
package formats
