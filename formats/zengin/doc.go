// Package zengin reads, validates and writes Zengin (全銀協) 120-byte
// transfer files: 総合振込 (種別コード 21), 給与/賞与 (11/12, 公務員 71/72) and
// 口座振替 (91) requests and results.
//
// Each record layout is declared once as a fixed.Layout (HeaderLayout,
// TransferDataLayout, ...); the documentation in docs/formats/zengin.md is
// generated from those declarations.
//
// Reading is streaming and strict. A Reader hands over one record at a
// time with constant memory whatever the file size; Validate checks a
// whole file (record order, characters, numbers, dates, trailer totals,
// missing end record) and collects every error, up to a cap, with its
// record number, line, byte offset, field and the offending bytes. A bad
// digit is never read as zero and a short record is never padded.
//
// To apply a file all-or-nothing use two passes: Validate the whole file
// first, and only when it returns no error, rewind and stream the records
// with a Reader to apply them (see Example_validateThenApply).
//
// Banks differ on the characters of names: the strict set (no ｰ) is the
// default and Options.Names / Writer.Names select the set with ｰ for a
// bank that accepts it. EDI情報 has its own, wider set. Writer.FoldSmallKana
// writes small kana full size instead of refusing them.
//
// The package is pure encode/decode/validate: it does no I/O beyond the
// io.Reader/io.Writer it is handed and imports nothing of zcgw except the
// sibling formats/fixed, formats/charset and formats/recordio packages.
package zengin
