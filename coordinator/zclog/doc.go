// Package zclog is zcgw's structured logging (spec 000 ch. 3): a log/slog
// handler that writes one JSON object per line with the fixed fields ts,
// level, event (the slog message, named scope.verb) and request_id, then
// the logger's baggage (txid, lane, ...) and the record's attributes.
//
// Secrets never reach the output: the keys vault_ref, preimage, secret,
// password and every key ending in _pii are written as "[REDACTED]" at any
// depth — top-level attributes, slog groups, maps, structs and slices passed
// as values. A bank customer's personal data is written "[REDACTED]" the
// same way, by key from one declared list (IsPIIKey): core account numbers
// (account, *_account), balances (balance, balance_*, *_balance) and names
// (holder_name, payer_name, ...); account_hash stays, as the key logs
// correlate on. Errors are flattened to {name, message, reason_code, details}.
//
// Components take a *slog.Logger parameter (OrDiscard turns nil into a
// logger that drops everything); there is no global logger here.
//
// It may import only coordinator/clock and coordinator/domainerr, and must
// not write anywhere but the io.Writer it is given.
package zclog
