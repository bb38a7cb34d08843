package orchestrator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
)

// Every request registered once (transfer, GTID, request to pay, HTLC)
// keeps the idempotency contract of registerOnce: the same key and body
// answer the first answer (Replayed) and write nothing; the same key with
// another body is IDEMPOTENCY_KEY_CONFLICT and writes nothing; a missing
// or malformed key and an unidentified issuer are refused before any
// transaction. One client key used for all four does not collide: each
// is stored under its own scope.
func TestRegisterOnceForEveryRequest(t *testing.T) {
	f := newFixture(t, nil)
	lock := sha256.Sum256([]byte("x"))
	jpy := func(v int64) bankapi.Amount { return bankapi.Amount{Value: v, Currency: "JPY"} }
	gtid := func(v int64) GtidRegister {
		return GtidRegister{GTID: "001-ONCE", Legs: []GtidLegRequest{
			{LegID: "P1", Role: bankapi.RolePayer, BankID: "001", AccountHash: "h:a", Amount: jpy(v)},
			{LegID: "E1", Role: bankapi.RolePayee, BankID: "002", AccountHash: "h:b", Amount: jpy(v)}}}
	}
	rtp := func(v int64) RtpRequest {
		return RtpRequest{RtpID: "RTP-002-ONCE", PayerBankID: "001", PayeeAccountHash: "h:b", Amount: jpy(v),
			ExpiresAt: clock.Stamp(f.clk.Now().Add(time.Hour)), PayeeName: "SHOP"}
	}
	htlc := func(v int64) HtlcCreate {
		return HtlcCreate{Amount: jpy(v), Payer: Party{BankID: "001", AccountHash: "h:a"}, Payee: Party{BankID: "002", AccountHash: "h:b"},
			HashAlg: HashAlgSHA256, Hashlock: hex.EncodeToString(lock[:]), Timelock: clock.Stamp(f.clk.Now().Add(time.Hour))}
	}
	type answer struct {
		body     any
		replayed bool
	}
	for _, c := range []struct {
		scope, issuer string
		call          func(amount int64, key, issuer string) (answer, error)
		rows          string // the rows the request writes
	}{
		{scopeTransfer, "001", func(v int64, key, issuer string) (answer, error) {
			r, err := f.o.Submit(f.ctx, pi(LaneExpress, v), key, issuer)
			return answer{r, r.Replayed}, err
		}, "SELECT COUNT(*) FROM Transactions WHERE lane = 'EXPRESS'"},
		{scopeGtid, "001", func(v int64, key, issuer string) (answer, error) {
			r, err := f.o.RegisterGtid(f.ctx, gtid(v), key, issuer)
			return answer{r, r.Replayed}, err
		}, "SELECT COUNT(*) FROM GtidTransactions"},
		{scopeRtp, "002", func(v int64, key, issuer string) (answer, error) {
			r, err := f.o.RequestRtp(f.ctx, rtp(v), key, issuer)
			return answer{r, r.Replayed}, err
		}, "SELECT COUNT(*) FROM RtpRequests"},
		{scopeHtlc, "001", func(v int64, key, issuer string) (answer, error) {
			r, err := f.o.CreateHTLC(f.ctx, htlc(v), key, issuer)
			return answer{r, r.Replayed}, err
		}, "SELECT COUNT(*) FROM HtlcContracts"},
	} {
		t.Run(c.scope, func(t *testing.T) {
			first, err := c.call(700, "once-1", c.issuer)
			if err != nil || first.replayed {
				t.Fatalf("first: %+v %v", first, err)
			}
			again, err := c.call(700, "once-1", c.issuer)
			a, _ := json.Marshal(first.body)
			b, _ := json.Marshal(again.body)
			if err != nil || !again.replayed || string(a) != string(b) {
				t.Fatalf("replay: %s vs %s (replayed %v) %v", a, b, again.replayed, err)
			}
			_, err = c.call(800, "once-1", c.issuer)
			wantCode(t, err, "IDEMPOTENCY_KEY_CONFLICT")
			_, err = c.call(700, "", c.issuer)
			wantCode(t, err, "MISSING_FIELD")
			_, err = c.call(700, "bad key with spaces", c.issuer)
			wantCode(t, err, "INVALID_REQUEST")
			if n := f.count(c.rows); n != 1 {
				t.Fatalf("%d rows after a replay and refusals, want 1", n)
			}
			if n := f.count("SELECT COUNT(*) FROM IdempotencyKeys WHERE key = ?", onceKey(c.scope, c.issuer, "once-1")); n != 1 {
				t.Fatalf("%d keys stored under %s", n, onceKey(c.scope, c.issuer, "once-1"))
			}
		})
	}
	_, err := f.o.RequestRtp(f.ctx, rtp(700), "once-2", "")
	wantCode(t, err, "UNAUTHORIZED")
}
