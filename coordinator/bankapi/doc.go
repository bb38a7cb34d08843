// Package bankapi declares, once, the request and response bodies of the 13
// ZC-to-bank ingress commands (spec 004, "ZC→Bank Ingress API"): the JSON
// field names here are the wire contract. Both ends import these types —
// the coordinator's bank client (the caller) and the bank-side adapter (the
// receiver) — so a field renamed on one side cannot compile on the other.
// Commands lists the 13 command names so seam coverage can be checked by
// machine. Validate methods return domainerr errors (MISSING_FIELD,
// INVALID_AMOUNT, INVALID_REQUEST) naming the offending field.
//
// It imports only coordinator/domainerr and must not import any other zcgw
// package, nor do any I/O.
package bankapi
