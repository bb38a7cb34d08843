// Package strictjson is the one JSON decoder of zcgw's HTTP edges (the
// gateway's /api bodies, the bank ingress bodies and the signed documents
// of coordinator/signing). On top of encoding/json it refuses what the
// standard decoder silently accepts: a key repeated in the same object (at
// any depth; the standard decoder keeps the last), a key that names a
// struct field only case-insensitively (`Amount` for `amount`), invalid
// UTF-8 and unpaired UTF-16 surrogate escapes (the standard decoder
// replaces them with U+FFFD), data after the document, and nesting deeper
// than MaxDepth. Unknown fields are refused when the caller asks for it.
//
// Every refusal is an *Error naming the problem, the JSON Pointer of the
// offending member and its byte offset, wrapped in the catalog's
// INVALID_REQUEST (coordinator/domainerr) with details {problem, field,
// byte_offset}. It also owns the JSON media-type rule of the edges
// (CheckContentType: application/json, charset utf-8 only).
//
// Shared infra: it imports nothing of zcgw but domainerr.
package strictjson
