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
// It is also the decoder of the configuration files (node.json, jobs.json).
// Options.Config adds what a file needs: every value is checked against its
// field's type during the walk (wrong JSON type, null for a non-nullable
// field, an integer out of its type's range as ProblemRange), so the
// refusal names the exact member. For the file's reader an *Error also
// carries Field (banks[1].accounts[0].opening_balance), and for an unknown
// member the known names and a "did you mean" Suggest; Position turns the
// byte offset into line:column and Reason words the problem. None of this
// changes what the HTTP edges refuse or the bodies they answer.
//
// Shared infra: it imports nothing of zcgw but domainerr.
package strictjson
