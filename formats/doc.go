// Package formats holds the wire and file formats zcgw exchanges with
// banks: the fixed-length record codec (formats/fixed), character sets
// (formats/charset), Zengin 120-byte files (formats/zengin), core MQ
// messages (formats/coremsg) and overnight posting/result files
// (formats/overnight).
//
// It must not import coordinator, adapter, gateway or jobs: formats are
// pure encode/decode/validate with no I/O beyond the readers and writers
// it is handed.
package formats
