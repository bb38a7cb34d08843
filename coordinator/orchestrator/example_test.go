package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Submit accepts a transfer, a worker drives it through its lane by
// calling the banks (here a test double of the ingress), and Query reads
// where it stands.
func ExampleOrchestrator_Submit() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "orchestrator-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "zc.db"), store.Schema)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	o, err := New(Config{DB: db, Banks: newFakeBanks(), Clock: clock.NewManual(t0)})
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"001", "002"} {
		if _, err := o.Participants().Create(ctx, participants.Participant{BankID: id, BankName: "Bank " + id, HLimit: 1_000_000, IsActive: true}); err != nil {
			panic(err)
		}
	}
	req := PaymentInitiated{TxID: "TX-EXAMPLE-1", Lane: LaneExpress, Amount: bankapi.Amount{Value: 1200, Currency: "JPY"},
		Payer: Party{BankID: "001", AccountHash: "h:payer"}, Payee: Party{BankID: "002", AccountHash: "h:payee"}}
	res, err := o.Submit(ctx, req, "client-key-1", "001")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.TxID, res.State)
	if _, err := o.RunUntilIdle(ctx); err != nil {
		panic(err)
	}
	v, err := o.Query(ctx, res.TxID)
	if err != nil {
		panic(err)
	}
	fmt.Println(v.State, v.Decision.Status, v.Execution.A, v.Execution.B, v.NextActionHint)
	again, _ := o.Submit(ctx, req, "client-key-1", "001")
	fmt.Println(again.TxID, again.State, again.Replayed)
	// Output:
	// TX-EXAMPLE-1 RECEIVED
	// SETTLED DECIDED_TO_SETTLE OK OK WAIT
	// TX-EXAMPLE-1 RECEIVED true
}

// CreateHTLC locks the payer's funds under a SHA-256 hashlock; the payee
// bank's ClaimHTLC with the preimage releases them (once: a repeated claim
// answers the same), and the worker settles the transfer.
func ExampleOrchestrator_ClaimHTLC() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "orchestrator-htlc-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "zc.db"), store.Schema)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	o, err := New(Config{DB: db, Banks: newFakeBanks(), Clock: clock.NewManual(t0)})
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"001", "002"} {
		if _, err := o.Participants().Create(ctx, participants.Participant{BankID: id, BankName: "Bank " + id, HLimit: 1_000_000, IsActive: true}); err != nil {
			panic(err)
		}
	}
	preimage := sha256.Sum256([]byte("the seller's secret"))
	hashlock := sha256.Sum256(preimage[:])
	h, err := o.CreateHTLC(ctx, HtlcCreate{TxID: "001-HTLC-EXAMPLE", Amount: bankapi.Amount{Value: 5000, Currency: "JPY"},
		Payer: Party{BankID: "001", AccountHash: "h:buyer"}, Payee: Party{BankID: "002", AccountHash: "h:seller"},
		HashAlg: HashAlgSHA256, Hashlock: hex.EncodeToString(hashlock[:]), Timelock: clock.Stamp(t0.Add(time.Hour))}, "escrow-1", "001")
	if err != nil {
		panic(err)
	}
	fmt.Println(h.TxID, h.State, h.TxState)
	if _, err := o.RunUntilIdle(ctx); err != nil {
		panic(err)
	}
	for i := 0; i < 2; i++ {
		c, err := o.ClaimHTLC(ctx, h.HtlcID, HtlcClaim{Preimage: hex.EncodeToString(preimage[:])}, "002")
		fmt.Println(c.State, c.SecretVerified, c.Replayed, err)
	}
	if _, err := o.RunUntilIdle(ctx); err != nil {
		panic(err)
	}
	v, _ := o.Query(ctx, h.TxID)
	fmt.Println(v.State)
	// Output:
	// 001-HTLC-EXAMPLE HTLC_RECEIVED RECEIVED
	// HTLC_FULFILL_REQUESTED true false <nil>
	// HTLC_FULFILL_REQUESTED true true <nil>
	// SETTLED
}
