package lane

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// NewLeg is a GtidLegs row to create with its GTID.
type NewLeg struct {
	LegID       string
	Role        LegRole
	BankID      string
	AccountHash string
	AmountValue int64  // minor units of Currency, > 0
	Currency    string // ISO 4217; "" means JPY
	ExpiresAt   string // RFC3339, optional
	OriginLegID string // optional (003 origin_leg_id)
}

// NewGtid is a GtidTransactions row to create with its legs.
type NewGtid struct {
	GTID            string
	InitiatorBankID string
	// State is the entry state: "" means GT_RECEIVED; GT_SETTLED only
	// for a GTID that records a settlement already done (the DNS
	// net-settlement GTID). Its legs are created in LegEntryStates[State].
	State GtidState
	// TotalAmount is GtidTransactions.total_amount; 0 means the sum of
	// the PAYER legs' amounts.
	TotalAmount int64
	ExpiresAt   string // RFC3339, optional
	MandateID   string // optional
	Legs        []NewLeg
	EventType   finality.EventType // "" means GtidRegistered (GtidSettled at GT_SETTLED)
	Payload     any
	SideUpdates SideUpdates
}

// GtidInsertResult reports whether the GTID was created. Inserted is
// false (and nothing was written) when the gtid exists.
type GtidInsertResult struct {
	Inserted bool
	Entry    finality.Entry
}

// InsertGtidWithLog creates n in its own write transaction.
func (l *Lanes) InsertGtidWithLog(ctx context.Context, n NewGtid) (GtidInsertResult, error) {
	var res GtidInsertResult
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		res, err = l.InsertGtidInTx(ctx, tx, n)
		return err
	})
	if err != nil {
		return GtidInsertResult{}, err
	}
	return res, nil
}

// InsertGtidInTx creates n inside the caller's write transaction: an
// INSERT OR IGNORE of the GtidTransactions row (version 0), then — only
// if it was inserted — every leg, the entry on the GTID's own chain
// (gtid set, txid NULL, state_from NULL) and the side updates. The entry
// state must be in GtidEntryStates; the legs need at least one PAYER and
// one PAYEE (MISSING_LEG_ROLE).
func (l *Lanes) InsertGtidInTx(ctx context.Context, tx *store.Tx, n NewGtid) (GtidInsertResult, error) {
	if err := checkNewGtid(&n); err != nil {
		return GtidInsertResult{}, err
	}
	if err := l.gate.CheckWritable(ctx, tx); err != nil {
		return GtidInsertResult{}, err
	}
	now := l.now()
	ok, err := store.Insert(ctx, tx, "GtidTransactions",
		[]string{"gtid", "state", "initiator_bank_id", "total_amount", "leg_count", "legs_settled_count", "expires_at", "version", "created_at", "updated_at", "mandate_id"},
		n.GTID, string(n.State), n.InitiatorBankID, n.TotalAmount, len(n.Legs), settledCount(n), nullable(n.ExpiresAt), 0, now, now, nullable(n.MandateID))
	if err != nil || !ok {
		return GtidInsertResult{}, err
	}
	legState := LegEntryStates[n.State]
	for _, g := range n.Legs {
		ok, err := store.Insert(ctx, tx, "GtidLegs",
			[]string{"leg_id", "gtid", "role", "bank_id", "account_hash", "amount_value", "leg_currency", "state", "expires_at", "origin_leg_id", "version", "created_at", "updated_at"},
			g.LegID, n.GTID, string(g.Role), g.BankID, g.AccountHash, g.AmountValue, g.Currency, string(legState), nullable(g.ExpiresAt), nullable(g.OriginLegID), 0, now, now)
		if err != nil {
			return GtidInsertResult{}, err
		}
		if !ok {
			return GtidInsertResult{}, domainerr.New("INVALID_REQUEST", "leg_id already used by another GTID", map[string]any{"gtid": n.GTID, "leg_id": g.LegID})
		}
	}
	if err := l.fault(ctx, tx, n.GTID); err != nil {
		return GtidInsertResult{}, err
	}
	entry, err := l.log.Append(ctx, tx, finality.Event{GTID: n.GTID, Type: n.EventType, StateTo: string(n.State), Payload: n.Payload})
	if err != nil {
		return GtidInsertResult{}, err
	}
	if n.SideUpdates != nil {
		if err := n.SideUpdates(ctx, tx); err != nil {
			return GtidInsertResult{}, err
		}
	}
	return GtidInsertResult{Inserted: true, Entry: entry}, nil
}

func settledCount(n NewGtid) int {
	if n.State == GtSettled {
		return len(n.Legs)
	}
	return 0
}

// checkNewGtid applies n's defaults and checks it.
func checkNewGtid(n *NewGtid) error {
	if n.State == "" {
		n.State = GtReceived
	}
	if n.EventType == "" {
		n.EventType = finality.GtidRegistered
		if n.State == GtSettled {
			n.EventType = finality.GtidSettled
		}
	}
	if n.GTID == "" {
		return missing("gtid")
	}
	if n.InitiatorBankID == "" {
		return missing("initiator_bank_id")
	}
	if n.GTID == finality.GlobalChain {
		return domainerr.New("INVALID_REQUEST", "gtid 'GLOBAL' is reserved", nil)
	}
	if !GtidEntryStates[n.State] {
		return domainerr.New("IMPOSSIBLE_TRANSITION", "not an entry state of ALLOWED_GTID_ENTRY_STATES",
			map[string]any{"gtid": n.GTID, "to": string(n.State)})
	}
	roles := map[LegRole]int64{}
	seen := map[string]bool{}
	for i := range n.Legs {
		g := &n.Legs[i]
		if g.Currency == "" {
			g.Currency = "JPY"
		}
		for field, v := range map[string]string{"leg_id": g.LegID, "bank_id": g.BankID, "account_hash": g.AccountHash} {
			if v == "" {
				return missing("legs[]." + field)
			}
		}
		if seen[g.LegID] {
			return domainerr.New("INVALID_REQUEST", "leg_id repeated", map[string]any{"gtid": n.GTID, "leg_id": g.LegID})
		}
		seen[g.LegID] = true
		if g.Role != LegPayer && g.Role != LegPayee {
			return domainerr.New("INVALID_REQUEST", "leg role must be PAYER or PAYEE", map[string]any{"leg_id": g.LegID, "role": string(g.Role)})
		}
		if g.AmountValue <= 0 {
			return domainerr.New("INVALID_AMOUNT", "leg amount must be a positive number of minor units", map[string]any{"leg_id": g.LegID, "amount_value": g.AmountValue})
		}
		if !isCurrencyCode(g.Currency) {
			return domainerr.New("INVALID_CURRENCY", "leg currency must be a 3-letter ISO 4217 code", map[string]any{"leg_id": g.LegID, "currency": g.Currency})
		}
		roles[g.Role] += g.AmountValue
	}
	if _, ok := roles[LegPayer]; !ok {
		return domainerr.New("MISSING_LEG_ROLE", "GTID has no PAYER leg", map[string]any{"gtid": n.GTID})
	}
	if _, ok := roles[LegPayee]; !ok {
		return domainerr.New("MISSING_LEG_ROLE", "GTID has no PAYEE leg", map[string]any{"gtid": n.GTID})
	}
	if n.TotalAmount == 0 {
		n.TotalAmount = roles[LegPayer]
	}
	if n.TotalAmount < 0 {
		return domainerr.New("INVALID_AMOUNT", "total_amount must not be negative", map[string]any{"gtid": n.GTID})
	}
	return nil
}
