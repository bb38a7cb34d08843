package fx

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Transfer is GET /api/fx/transfers/{gtid}: the FxTransfers row, the
// conduit GTID's state and legs, and the leg locks (bind_htlc only).
type Transfer struct {
	GTID          string         `json:"gtid"`
	Status        TransferStatus `json:"status"`
	FromCurrency  string         `json:"from_currency"`
	ToCurrency    string         `json:"to_currency"`
	AmountFrom    int64          `json:"amount_from"`
	AmountTo      int64          `json:"amount_to"`
	EffectiveRate int64          `json:"effective_rate"`
	Hashlock      string         `json:"hashlock"`
	QuoteIDs      []string       `json:"quote_ids"`
	Route         Route          `json:"route"`
	GtidState     lane.GtidState `json:"gtid_state"`
	Legs          []GtidLeg      `json:"legs"`
	LegLocks      []Leg          `json:"leg_locks"`
	CreatedAt     string         `json:"created_at"`
	UpdatedAt     string         `json:"updated_at"`
}

// GtidLeg is one GtidLegs row of the conduit GTID.
type GtidLeg struct {
	LegID        string        `json:"leg_id"`
	TxID         string        `json:"txid,omitempty"`
	Role         lane.LegRole  `json:"role"`
	BankID       string        `json:"bank_id"`
	AccountHash  string        `json:"account_hash"`
	Amount       int64         `json:"amount_value"`
	Currency     string        `json:"leg_currency"`
	State        lane.LegState `json:"state"`
	BankProofRef string        `json:"bank_proof_ref,omitempty"`
	expiresAt    string
}

// LegsOrLocks returns the currency legs of the transfer: the leg locks of
// a bind_htlc transfer, otherwise the legs rebuilt from the GTID's
// PAYER/PAYEE pairs (same index, txid, amounts and timelocks).
func (t Transfer) LegsOrLocks() []Leg {
	if len(t.LegLocks) > 0 {
		return t.LegLocks
	}
	var out []Leg
	for i := 0; ; i++ {
		var p, r *GtidLeg
		for k := range t.Legs {
			switch t.Legs[k].LegID {
			case payerLeg(t.GTID, i):
				p = &t.Legs[k]
			case payeeLeg(t.GTID, i):
				r = &t.Legs[k]
			}
		}
		if p == nil || r == nil {
			return out
		}
		out = append(out, Leg{Index: i, TxID: LegTxID(t.GTID, i), Currency: p.Currency, Amount: p.Amount, FromBankID: p.BankID,
			FromAccount: p.AccountHash, ToBankID: r.BankID, ToAccount: r.AccountHash, Timelock: p.expiresAt})
	}
}

// Get reads an FX transfer; an unknown gtid is GTID_NOT_FOUND.
func (f *FX) Get(ctx context.Context, gtid string) (Transfer, error) {
	var t Transfer
	err := f.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		t, err = getTransferTx(ctx, tx, gtid)
		return err
	})
	return t, err
}

func getTransferTx(ctx context.Context, tx *store.Tx, gtid string) (Transfer, error) {
	var t Transfer
	var st, route, quotes, gst string
	err := tx.QueryRowContext(ctx, `SELECT f.gtid, f.status, f.from_currency, f.to_currency, f.amount_from, f.amount_to,
		f.effective_rate, f.hashlock, f.route_json, f.quote_ids, f.created_at, f.updated_at, COALESCE(g.state, '')
		FROM FxTransfers f LEFT JOIN GtidTransactions g ON g.gtid = f.gtid WHERE f.gtid = ?`, gtid).
		Scan(&t.GTID, &st, &t.FromCurrency, &t.ToCurrency, &t.AmountFrom, &t.AmountTo, &t.EffectiveRate, &t.Hashlock,
			&route, &quotes, &t.CreatedAt, &t.UpdatedAt, &gst)
	if errors.Is(err, sql.ErrNoRows) {
		return Transfer{}, NotFound(gtid)
	}
	if err != nil {
		return Transfer{}, fmt.Errorf("fx: read transfer %s: %w", gtid, err)
	}
	t.Status, t.GtidState = TransferStatus(st), lane.GtidState(gst)
	t.QuoteIDs = strings.Split(quotes, ",")
	if err := json.Unmarshal([]byte(route), &t.Route); err != nil {
		return Transfer{}, fmt.Errorf("fx: route of %s: %w", gtid, err)
	}
	legs, err := lane.LegsInTx(ctx, tx, gtid)
	if err != nil {
		return Transfer{}, err
	}
	t.Legs = make([]GtidLeg, 0, len(legs))
	for _, g := range legs {
		t.Legs = append(t.Legs, GtidLeg{LegID: g.LegID, TxID: g.TxID, Role: g.Role, BankID: g.BankID, AccountHash: g.AccountHash,
			Amount: g.AmountValue, Currency: g.Currency, State: g.State, BankProofRef: g.BankProofRef, expiresAt: g.ExpiresAt})
	}
	rows, err := tx.QueryContext(ctx, `SELECT leg_index, currency, amount, from_bank_id, from_account_hash, to_bank_id,
		to_account_hash, timelock, state FROM FxLegLocks WHERE gtid = ? ORDER BY leg_index`, gtid)
	if err != nil {
		return Transfer{}, fmt.Errorf("fx: read leg locks %s: %w", gtid, err)
	}
	defer rows.Close()
	t.LegLocks = []Leg{}
	for rows.Next() {
		var l Leg
		var ls string
		if err := rows.Scan(&l.Index, &l.Currency, &l.Amount, &l.FromBankID, &l.FromAccount, &l.ToBankID, &l.ToAccount, &l.Timelock, &ls); err != nil {
			return Transfer{}, fmt.Errorf("fx: scan leg lock: %w", err)
		}
		l.State, l.TxID = LockState(ls), LegTxID(gtid, l.Index)
		t.LegLocks = append(t.LegLocks, l)
	}
	return t, rows.Err()
}
