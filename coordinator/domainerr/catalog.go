package domainerr

// The error catalog of spec 004. Every reason code any zcgw package uses
// must be registered here with its category.
func init() {
	register(Validation, "INVALID_REQUEST", "MISSING_FIELD", "INVALID_AMOUNT")
	register(Conflict, "CONCURRENCY_CONFLICT", "STATE_GUARD", "IDEMPOTENCY_KEY_CONFLICT", "H_LIMIT_EXCEEDED")
	register(Downstream, "SYSTEM_QUORUM_LOSS_READ_ONLY", "SYSTEM_BCP_READ_ONLY", "LEGACY_ADAPTER_REQUEST_IN_FLIGHT")
	register(Invariant, "IMPOSSIBLE_TRANSITION", "OWNERSHIP_VIOLATION", "INVARIANT_VIOLATION", "CHAIN_TAMPERED")
}
