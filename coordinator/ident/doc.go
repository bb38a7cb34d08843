// Package ident is the one grammar of zcgw's identifiers: every id a
// client, a bank or a file hands the node (txid, idempotency_key,
// request_id, account_hash, participant_ref, client_ref, pspr_ref, nonce,
// key id, bank id, ...) has a Kind here with its character set and its
// maximum length, and the edges (HTTP API, bank ingress, participant
// query signatures, file drop) check values with Check before anything is
// stored or sent on.
//
// Every character set is a subset of printable ASCII without the space:
// no control characters, NUL, newline, DEL or non-ASCII byte ever passes,
// so an identifier can always go into an HTTP header, a log line, a path
// segment of the node's own routes and a fixed-width EBCDIC/Shift_JIS
// field. docs/gateway.md "Identifiers" is the table of kinds.
//
// It imports only coordinator/domainerr of zcgw.
package ident
