package ledger

import "errors"

// Sentinel causes. Every error the ledger returns for these situations is a
// *domainerr.Error (reason code and category) whose cause is one of these,
// so callers test with errors.Is(err, ledger.ErrLeaseHeld) and HTTP callers
// map the reason code.
var (
	// ErrLeaseHeld: another runner holds an unexpired lease on the job
	// (CONCURRENCY_CONFLICT).
	ErrLeaseHeld = errors.New("job lease held by another runner")
	// ErrFenced: the caller's lease token is no longer the job's current
	// token; its write was refused (CONCURRENCY_CONFLICT).
	ErrFenced = errors.New("stale fencing token")
	// ErrAlreadyCompleted: the job instance for this business date and slot
	// is COMPLETED; re-running needs force and a reason (ALREADY_PROCESSED).
	ErrAlreadyCompleted = errors.New("job instance already completed")
	// ErrForceReason: a forced re-run was asked for without a reason or
	// without who asked (MISSING_FIELD).
	ErrForceReason = errors.New("forced re-run needs a reason and who forced it")
	// ErrRunNotFound: no JobRuns row has that run_id (NOT_FOUND).
	ErrRunNotFound = errors.New("job run not found")
)
