// Package filetool is the logic behind `zcgw files describe|validate|
// convert FILE`: it recognises a Zengin file, an overnight posting or
// result file or a core balance file, describes it for people, lists every error with its
// record, line, byte offset and field, and converts between separator
// styles and (Zengin) between JIS and EBCDIC.
//
// It reads through formats/zengin, formats/overnight and
// formats/corebalance, holds constant
// memory whatever the file size, and writes only to the writers it is
// given (a progress bar, when asked for, goes to its own writer). It must
// not import anything outside formats/.
package filetool
