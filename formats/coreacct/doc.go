// Package coreacct owns the core account key "BBB-T-NNNNNNN" (branch 3
// digits, account type 1 digit, account number 7 digits): the three fields
// every core message and overnight file detail carries, and the key the
// adapter's outbox, the core link and the simulated core store.
//
// It is the one parser and formatter of that key, and the one place that
// says how an account number may appear in text meant for people (errors,
// logs): Mask keeps the branch, the type and the last 4 digits, so an
// operator can tell accounts apart while the full number stays out of logs
// (spec 000 ch. 3, PII-safe logging; docs/coordinator-support.md).
//
// It imports nothing of zcgw.
package coreacct
