package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// A 60 KB idempotency key is refused before it is stored, naming the field.
func TestSubmitRefusesAnOversizedIdempotencyKey(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.o.Submit(f.ctx, pi(LaneExpress, 10), strings.Repeat("k", 60<<10), "001")
	wantCode(t, err, "INVALID_REQUEST")
	if de, _ := domainerr.As(err); de.Details["field"] != "idempotency_key" {
		t.Fatalf("details %v", de.Details)
	}
	if n := f.count(`SELECT COUNT(*) FROM IdempotencyKeys`) + f.count(`SELECT COUNT(*) FROM Transactions`); n != 0 {
		t.Fatalf("%d rows written", n)
	}
}

// A txid another payer's transfer holds is answered to a non-party with
// ErrTxIDNotUsable, byte for byte: never "already exists". The payer of
// the existing transfer still hears that it exists.
func TestSubmitTxIDCollisionRevealsNothingToANonParty(t *testing.T) {
	f := newFixture(t, nil)
	first := pi(LaneExpress, 10)
	first.TxID = "TX-TAKEN-1"
	f.submit(first, "first")

	other := pi(LaneExpress, 10)
	other.TxID = "TX-TAKEN-1"
	other.Payer, other.Payee = first.Payee, first.Payer // 002 pays 001: a different pair's issuer
	_, err := f.o.Submit(f.ctx, other, "other", "002")
	got, _ := json.Marshal(domainerr.JSON(err, "r"))
	want, _ := json.Marshal(domainerr.JSON(ErrTxIDNotUsable("002"), "r"))
	if string(got) != string(want) {
		t.Fatalf("non-party answer\n got %s\nwant %s", got, want)
	}
	if strings.Contains(string(got), "exists") {
		t.Fatalf("answer reveals existence: %s", got)
	}

	again := first
	_, err = f.o.Submit(f.ctx, again, "again", "001")
	if de, _ := domainerr.As(err); de == nil || !strings.Contains(de.Message, "already exists") {
		t.Fatalf("payer's own collision: %v", err)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 1 {
		t.Fatalf("%d Transactions rows", n)
	}
}
