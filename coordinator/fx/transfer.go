package fx

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/ident"
)

// Party is a payer or payee: a bank and an account there.
type Party struct {
	BankID      string `json:"bank_id"`
	AccountHash string `json:"account_hash"`
}

// TransferRequest is POST /api/fx/transfers (001 §17.2).
type TransferRequest struct {
	GTID             string            `json:"gtid"`
	IdempotencyKey   string            `json:"idempotency_key"`
	FromCurrency     string            `json:"from_currency"`
	ToCurrency       string            `json:"to_currency"`
	Amount           int64             `json:"amount"`
	Denomination     string            `json:"denomination,omitempty"`
	Payer            Party             `json:"payer"`
	Payee            Party             `json:"payee"`
	FxpAccounts      map[string]string `json:"fxp_accounts"` // "<bankId>:<currency>" -> account_hash
	MaxBridgeHops    *int              `json:"max_bridge_hops,omitempty"`
	ExpiresAt        string            `json:"expires_at,omitempty"`
	MinEffectiveRate int64             `json:"min_effective_rate,omitempty"`
	BindHTLC         bool              `json:"bind_htlc,omitempty"`
	// Hashlock (hex SHA-256) lets the payer keep the secret; empty on a
	// bind_htlc transfer means ZC draws the secret and returns it once.
	Hashlock string `json:"hashlock,omitempty"`
}

// MaxGTIDLen bounds an FX gtid so every leg txid (gtid + "-L" + digit)
// fits the core message's 32-byte transaction id (ident.TxID).
const MaxGTIDLen = 29

// DefaultLockTTL is how long a transfer without expires_at may wait for
// its claim (bounded by its quotes' valid_to).
const DefaultLockTTL = 10 * time.Minute

// HopMargin is FX_HTLC_HOP_MARGIN: each leg upstream of the payee's keeps
// its lock this much longer than the leg after it, and a claim needs this
// much time left before the upstream-most timelock (004
// FX_CLAIM_WINDOW_EXPIRED).
const HopMargin = time.Minute

func (r *TransferRequest) check() error {
	q := QuoteRequest{FromCurrency: r.FromCurrency, ToCurrency: r.ToCurrency, Amount: r.Amount, Denomination: r.Denomination, MaxBridgeHops: r.MaxBridgeHops}
	if err := q.check(); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"gtid", r.GTID}, {"idempotency_key", r.IdempotencyKey},
		{"payer.bank_id", r.Payer.BankID}, {"payer.account_hash", r.Payer.AccountHash},
		{"payee.bank_id", r.Payee.BankID}, {"payee.account_hash", r.Payee.AccountHash}} {
		if f.v == "" {
			return domainerr.New("MISSING_FIELD", f.name+" is required", map[string]any{"field": f.name})
		}
	}
	if len(r.GTID) > MaxGTIDLen {
		return domainerr.New("INVALID_REQUEST", fmt.Sprintf("gtid is at most %d bytes (its leg txids must fit 32)", MaxGTIDLen),
			map[string]any{"field": "gtid", "length": len(r.GTID)})
	}
	for _, c := range []struct {
		k     ident.Kind
		field string
		v     string
	}{{ident.TxID, "gtid", r.GTID}, {ident.IdempotencyKey, "idempotency_key", r.IdempotencyKey},
		{ident.BankID, "payer.bank_id", r.Payer.BankID}, {ident.AccountHash, "payer.account_hash", r.Payer.AccountHash},
		{ident.BankID, "payee.bank_id", r.Payee.BankID}, {ident.AccountHash, "payee.account_hash", r.Payee.AccountHash}} {
		if err := ident.Check(c.k, c.field, c.v); err != nil {
			return err
		}
	}
	if r.Hashlock != "" {
		if b, err := hex.DecodeString(r.Hashlock); err != nil || len(b) != sha256.Size {
			return domainerr.New("INVALID_REQUEST", "hashlock must be 64 hex digits (SHA-256)", map[string]any{"field": "hashlock"})
		}
	}
	if r.ExpiresAt != "" {
		if _, err := time.Parse(time.RFC3339Nano, r.ExpiresAt); err != nil {
			return domainerr.New("INVALID_REQUEST", "expires_at must be RFC3339", map[string]any{"field": "expires_at", "value": r.ExpiresAt})
		}
	}
	if r.MinEffectiveRate < 0 {
		return domainerr.New("INVALID_REQUEST", "min_effective_rate cannot be negative", map[string]any{"field": "min_effective_rate"})
	}
	return nil
}

// Leg is one currency leg of a conduit transfer: From pays To Amount of
// Currency. Leg 0 is payer -> first FXP, the last is last FXP -> payee.
type Leg struct {
	Index       int       `json:"leg_index"`
	TxID        string    `json:"txid"`
	Currency    string    `json:"currency"`
	Amount      int64     `json:"amount"`
	FromBankID  string    `json:"from_bank_id"`
	FromAccount string    `json:"from_account_hash"`
	ToBankID    string    `json:"to_bank_id"`
	ToAccount   string    `json:"to_account_hash"`
	Timelock    string    `json:"timelock"`
	State       LockState `json:"state,omitempty"`
}

// LegTxID is the txid of leg i of gtid: its Transactions row, its H
// reservation and its hold at the paying bank all carry it.
func LegTxID(gtid string, i int) string { return fmt.Sprintf("%s-L%d", gtid, i) }

// HReservationID is the id of the H reservation of leg i.
func HReservationID(gtid string, i int) string { return "H-" + LegTxID(gtid, i) }

// FxpAccountKey is the fxp_accounts key of bank's account in currency.
func FxpAccountKey(bankID, currency string) string { return bankID + ":" + currency }

// buildLegs lays the route out as currency legs, checking that
// fxp_accounts names an account of every FXP in both currencies of its
// hop (FX_FXP_ACCOUNT_MISSING).
func buildLegs(req TransferRequest, rt Route) ([]Leg, error) {
	acct := func(bank, cur string) (string, error) {
		a := req.FxpAccounts[FxpAccountKey(bank, cur)]
		if a == "" {
			return "", domainerr.New("FX_FXP_ACCOUNT_MISSING", "fxp_accounts has no "+FxpAccountKey(bank, cur),
				map[string]any{"field": "fxp_accounts", "key": FxpAccountKey(bank, cur)})
		}
		return a, ident.Check(ident.AccountHash, "fxp_accounts."+FxpAccountKey(bank, cur), a)
	}
	legs := make([]Leg, 0, len(rt.Hops)+1)
	from := req.Payer
	for i, h := range rt.Hops {
		in, err := acct(h.FxpBankID, h.FromCurrency)
		if err != nil {
			return nil, err
		}
		legs = append(legs, Leg{Index: i, TxID: LegTxID(req.GTID, i), Currency: h.FromCurrency, Amount: h.AmountFrom,
			FromBankID: from.BankID, FromAccount: from.AccountHash, ToBankID: h.FxpBankID, ToAccount: in})
		out, err := acct(h.FxpBankID, h.ToCurrency)
		if err != nil {
			return nil, err
		}
		from = Party{BankID: h.FxpBankID, AccountHash: out}
	}
	last := rt.Hops[len(rt.Hops)-1]
	legs = append(legs, Leg{Index: len(rt.Hops), TxID: LegTxID(req.GTID, len(rt.Hops)), Currency: last.ToCurrency,
		Amount: last.AmountTo, FromBankID: from.BankID, FromAccount: from.AccountHash, ToBankID: req.Payee.BankID, ToAccount: req.Payee.AccountHash})
	return legs, nil
}

// expiry is when the transfer stops being claimable: expires_at (default
// now + DefaultLockTTL), never after the route's quotes expire.
func expiry(req TransferRequest, rt Route, now time.Time) (time.Time, error) {
	exp := now.Add(DefaultLockTTL)
	if req.ExpiresAt != "" {
		t, _ := time.Parse(time.RFC3339Nano, req.ExpiresAt)
		exp = t.UTC()
	}
	if vt, err := clock.ParseStamp(rt.ValidTo); err == nil && vt.Before(exp) {
		exp = vt.UTC()
	}
	if !exp.After(now) {
		return time.Time{}, domainerr.New("FX_QUOTE_EXPIRED", "the transfer would expire before it could be claimed",
			map[string]any{"expires_at": clock.Stamp(exp)})
	}
	return exp, nil
}

// setTimelocks staggers the legs' timelocks: the payee's leg (last) ends
// at exp, each leg upstream HopMargin later, so the payer's leg is
// released last (001 §17.4).
func setTimelocks(legs []Leg, exp time.Time) {
	for i := range legs {
		legs[i].Timelock = clock.Stamp(exp.Add(time.Duration(len(legs)-1-i) * HopMargin))
	}
}

// claimDeadline is the last instant a claim may start: one HopMargin
// before the upstream-most timelock.
func claimDeadline(legs []Leg) (time.Time, error) {
	t, err := clock.ParseStamp(legs[0].Timelock)
	if err != nil {
		return time.Time{}, fmt.Errorf("fx: timelock %q: %w", legs[0].Timelock, err)
	}
	return t.Add(-HopMargin), nil
}

// NewSecret draws a 32-byte secret and returns it (hex) with its hashlock.
func NewSecret() (secret, hashlock string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("fx: draw secret: %w", err)
	}
	secret = hex.EncodeToString(b)
	return secret, Hashlock(secret), nil
}

// Hashlock is hex(SHA-256(secret)), the secret taken as the string given.
func Hashlock(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func quoteIDsColumn(rt Route) string { return strings.Join(rt.QuoteIDs(), ",") }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled here
	}
	return string(b)
}
