package lane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// LegRole is GtidLegs.role (spec 003).
type LegRole string

// The leg roles.
const (
	LegPayer LegRole = "PAYER"
	LegPayee LegRole = "PAYEE"
)

// LegState is GtidLegs.state. Spec 003 names the column type LegState but
// lists no values; zcgw's values follow the GTID lifecycle (docs/gtid-rtp.md):
// a leg is registered PENDING, its bank answers leg-ready-check (READY or
// NOT_READY), the GT-level decision materialises the READY legs' transfers
// (DECIDED, txid set) or cancels every leg (CANCELLED), and a decided leg
// ends SETTLED with its transfer.
type LegState string

// The leg states.
const (
	LegPending   LegState = "LEG_PENDING"
	LegReady     LegState = "LEG_READY"
	LegNotReady  LegState = "LEG_NOT_READY"
	LegDecided   LegState = "LEG_DECIDED"
	LegSettled   LegState = "LEG_SETTLED"
	LegCancelled LegState = "LEG_CANCELLED"
	// LegFailed: the leg's transfer ended FAILED_EXECUTION and the
	// operator closed its GTID (GT_FAILED_EXECUTION).
	LegFailed LegState = "LEG_FAILED"
)

// AllowedLegTransitions is the GtidLegs state machine: every legal edge.
var AllowedLegTransitions = map[LegState][]LegState{
	LegPending:   {LegReady, LegNotReady, LegCancelled},
	LegReady:     {LegDecided, LegCancelled},
	LegNotReady:  {LegCancelled},
	LegDecided:   {LegSettled, LegFailed},
	LegSettled:   nil,
	LegCancelled: nil,
	LegFailed:    nil,
}

// LegEntryStates are the states a GtidLegs row may be inserted in, per
// the entry state of its GTID: PENDING for a normal registration,
// SETTLED for the legs of a GTID created at GT_SETTLED (the DNS
// net-settlement GTID, 000 §4).
var LegEntryStates = map[GtidState]LegState{
	GtReceived: LegPending,
	GtSettled:  LegSettled,
}

// CanTransitionLeg reports whether from -> to is in AllowedLegTransitions.
func CanTransitionLeg(from, to LegState) bool {
	for _, s := range AllowedLegTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Terminal reports whether s has no outgoing edge.
func (s LegState) Terminal() bool {
	next, ok := AllowedLegTransitions[s]
	return ok && len(next) == 0
}

// Leg is a GtidLegs row as read.
type Leg struct {
	LegID        string
	GTID         string
	TxID         string // "" until the leg's transfer is materialised
	Role         LegRole
	BankID       string
	AccountHash  string
	AmountValue  int64
	Currency     string
	State        LegState
	BankProofRef string // JSON, "" when none
	ExpiresAt    string
	Version      int64
	OriginLegID  string
}

// LegTransition moves one GtidLegs row from From to To.
type LegTransition struct {
	LegID    string
	GTID     string // when set, the leg must belong to this GTID
	From, To LegState
	// TxID, when set, links the leg to its materialised transfer in the
	// same CAS (only on the edge to LEG_DECIDED).
	TxID string
	// BankProofRef, when set, stores the bank's answer (JSON) in the same
	// CAS: the leg-ready-check result, for instance.
	BankProofRef string
}

// LegResult reports a leg transition. When Applied is false nothing was
// written and State says where the leg is.
type LegResult struct {
	Applied bool
	State   LegState // state after the call
	Version int64    // version after the call
}

// TransitionLeg runs t in its own write transaction.
func (l *Lanes) TransitionLeg(ctx context.Context, t LegTransition) (LegResult, error) {
	var res LegResult
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.TransitionLegInTx(ctx, tx, t)
		return err
	})
	if err != nil {
		return LegResult{}, err
	}
	return res, nil
}

// TransitionLegInTx is the guarded update of a GtidLegs row inside the
// caller's write transaction: the edge is checked against
// AllowedLegTransitions, the writable gate is passed, and the UPDATE
// applies only if state and version are still what was read. A leg no
// longer in From is not an error (Applied false). A leg's answer is
// evidence for the GT-level decision, which is what the GTID's chain
// records (TransitionGtidInTx); a leg move writes no FinalityLog entry
// of its own.
func (l *Lanes) TransitionLegInTx(ctx context.Context, tx *store.Tx, t LegTransition) (LegResult, error) {
	if t.LegID == "" {
		return LegResult{}, missing("leg_id")
	}
	if !CanTransitionLeg(t.From, t.To) {
		return LegResult{}, domainerr.New("IMPOSSIBLE_TRANSITION", "transition not in the GtidLegs state machine",
			map[string]any{"leg_id": t.LegID, "from": string(t.From), "to": string(t.To)})
	}
	if t.TxID != "" && t.To != LegDecided {
		return LegResult{}, domainerr.New("INVALID_REQUEST", "a leg is linked to its transfer only when it is decided",
			map[string]any{"leg_id": t.LegID, "to": string(t.To)})
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return LegResult{}, err
	}
	cur, err := readLegTx(ctx, tx, t.LegID)
	if err != nil {
		return LegResult{}, err
	}
	if t.GTID != "" && cur.GTID != t.GTID {
		return LegResult{}, domainerr.New("INVALID_REQUEST", "leg does not belong to this GTID",
			map[string]any{"leg_id": t.LegID, "gtid": t.GTID})
	}
	notApplied := LegResult{State: cur.State, Version: cur.Version}
	if cur.State != t.From {
		return notApplied, nil
	}
	q := "UPDATE GtidLegs SET state = ?, version = version + 1, updated_at = ?"
	args := []any{string(t.To), l.now()}
	if t.TxID != "" {
		q += ", txid = ?"
		args = append(args, t.TxID)
	}
	if t.BankProofRef != "" {
		q += ", bank_proof_ref = ?"
		args = append(args, t.BankProofRef)
	}
	q += " WHERE leg_id = ? AND state = ? AND version = ?"
	args = append(args, t.LegID, string(cur.State), cur.Version)
	ok, err := store.Applied(tx.ExecContext(ctx, q, args...))
	if err != nil {
		return LegResult{}, fmt.Errorf("lane: leg CAS %s %s->%s: %w", t.LegID, t.From, t.To, err)
	}
	if !ok {
		return notApplied, nil
	}
	return LegResult{Applied: true, State: t.To, Version: cur.Version + 1}, nil
}

const legColumns = `leg_id, gtid, COALESCE(txid, ''), role, bank_id, account_hash, amount_value, leg_currency,
	state, COALESCE(bank_proof_ref, ''), COALESCE(expires_at, ''), version, COALESCE(origin_leg_id, '')`

func scanLeg(sc interface{ Scan(...any) error }) (Leg, error) {
	var g Leg
	var role, state string
	err := sc.Scan(&g.LegID, &g.GTID, &g.TxID, &role, &g.BankID, &g.AccountHash, &g.AmountValue, &g.Currency,
		&state, &g.BankProofRef, &g.ExpiresAt, &g.Version, &g.OriginLegID)
	g.Role, g.State = LegRole(role), LegState(state)
	return g, err
}

func readLegTx(ctx context.Context, tx *store.Tx, legID string) (Leg, error) {
	g, err := scanLeg(tx.QueryRowContext(ctx, "SELECT "+legColumns+" FROM GtidLegs WHERE leg_id = ?"+tx.ForUpdate(), legID))
	if errors.Is(err, sql.ErrNoRows) {
		return Leg{}, domainerr.New("GTID_NOT_FOUND", "GTID leg not found", map[string]any{"leg_id": legID})
	}
	if err != nil {
		return Leg{}, fmt.Errorf("lane: read leg %s: %w", legID, err)
	}
	return g, nil
}

// LegsInTx reads a GTID's legs, ordered by role (PAYEE before PAYER) and
// leg_id: the order spec 000's pairing rule needs (payer and payee legs
// each sorted by leg_id, paired by index).
func LegsInTx(ctx context.Context, tx *store.Tx, gtid string) ([]Leg, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+legColumns+" FROM GtidLegs WHERE gtid = ? ORDER BY role, leg_id", gtid)
	if err != nil {
		return nil, fmt.Errorf("lane: read legs of %s: %w", gtid, err)
	}
	defer rows.Close()
	var out []Leg
	for rows.Next() {
		g, err := scanLeg(rows)
		if err != nil {
			return nil, fmt.Errorf("lane: scan leg of %s: %w", gtid, err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lane: read legs of %s: %w", gtid, err)
	}
	return out, nil
}
