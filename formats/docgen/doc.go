// Package docgen renders fixed-length record layouts (fixed.Layout) as
// Markdown tables — position, length, type, field and meaning — and keeps
// the generated part of docs/formats/*.md in step with the code.
//
// Each document has hand-written prose (purpose, sources, decisions) and
// one generated block between the markers BeginMarker and EndMarker. The
// test in this package regenerates every block and fails when a document
// and the code disagree; `go test ./formats/docgen -run TestDocs -update`
// rewrites the blocks.
//
// It imports the format packages it documents (formats/zengin,
// formats/overnight, formats/coremsg) only from its test; the package
// itself depends on formats/fixed alone and does no I/O.
package docgen
