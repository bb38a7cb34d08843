package domainerr

// The error catalog of spec 004. Every reason code any zcgw package uses
// must be registered here with its category.
func init() {
	register(Validation, "VALIDATION_FAILED")
	register(Conflict, "OWNERSHIP_VIOLATION", "STATE_CONFLICT", "IDEMPOTENCY_KEY_CONFLICT", "H_LIMIT_EXCEEDED")
	register(Downstream, "SYSTEM_QUORUM_LOSS_READ_ONLY", "SYSTEM_BCP_READ_ONLY")
	register(Invariant, "INVALID_TRANSITION")
	register(Internal, "INTERNAL_ERROR")
}
