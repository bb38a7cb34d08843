// Package entitystate is the one way the status of a non-transaction
// entity changes (spec 003 EntityStateLog): Cases.state,
// PsprRegistry.capability_state and any entity registered here. Transition
// is a guarded UPDATE of the status column (current state in the allowed
// set, and different from the target) followed, only when it applied, by
// an EntityStateLog row in the same transaction, so the status column is
// always the projection of the log. Record appends the log row of a
// creation or of another guarded change the caller made in the same
// transaction (e.g. a case absorbing one more transaction).
//
// Money-path state (Transactions, HTLC, GTID) never goes through here: the
// lane primitives write it with the FinalityLog. It imports only
// coordinator/store, clock and domainerr, and writes no table but the
// registered entity tables' status columns and EntityStateLog.
package entitystate
