// Package bankclient is the coordinator's signed HTTP client of the 13 bank
// ingress commands (spec 004 ZC→Bank Ingress API). It implements
// orchestrator.Banks: Call marshals the bankapi request once, signs exactly
// those bytes (coordinator/signing), POSTs them to
// {base}/bank/{bank_id}/zc-ingress/{command} and decodes the answer into
// the bankapi response type.
//
// Error contract (what the queue's retry policy relies on): a catalog
// error body from the bank comes back as a *domainerr.Error with the
// bank's reason_code, category and details unchanged; a transport failure
// or a 5xx without a catalog body is BANK_ERROR (DOWNSTREAM); no answer in
// time is BANK_TIMEOUT (TIMEOUT).
//
// It imports only coordinator/bankapi, signing, domainerr, zclog and
// failpoint (the chaos suite's crash point after a bank answered); it must
// not import the adapter or the gateway (it knows the bank only by HTTP).
package bankclient
