// Package batchwindow is the body of the BULK and DEFERRED window jobs
// (scheduler catalogue names bulk-window and deferred-window; spec 001
// ch. 14): at a window's close it snapshots the candidates (the lane's
// transfers in RECEIVED, held by ZC, created before the close and without
// an H reservation yet), reads the constraints (each payer's available H,
// stopped payers), lets jobs/lsm propose the set, and then decides
// acceptance the only way the spec allows: by committing the H reservation
// of each proposed transfer (coordinator/hlimit.ReserveH). Each accepted
// transfer is handed to the orchestrator through the Acceptor port in the
// same transaction; every other candidate simply stays RECEIVED for the
// next window (deferred, never rejected). The run is recorded in LsmRuns
// with its snapshot so that it can be reproduced.
//
// All of it is one RunTx step: the reservations, the hand-over and the
// LsmRuns row commit together with the step's completion, exactly once.
// It never writes Transactions (the orchestrator moves the transfers with
// the lane primitives) and imports coordinator packages, jobs/lsm and
// jobs/scheduler only.
package batchwindow
