// Package sysmode owns the coordinator's system modes (spec 000 ch. 6):
// NORMAL, QUORUM_LOSS_READONLY and BCP_READONLY, stored in the SystemMode
// table, and the writable gate every lane primitive passes before it
// writes.
//
// The two read-only flags are independent and have one owner each:
// ReconcileQuorum alone sets and clears QUORUM_LOSS_READONLY (strict
// majority floor(N/2)+1 of the configured replicas); the operator's
// ActivateBCP / DeactivateBCP alone set and clear BCP_READONLY. Every
// change is a GLOBAL-chain FinalityLog event in the same transaction.
// Reads are always allowed.
//
// It imports only coordinator/store, coordinator/finality,
// coordinator/clock and coordinator/domainerr.
package sysmode
