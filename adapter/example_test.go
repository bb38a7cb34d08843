package adapter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
)

// A debit approved against the shadow ledger is queued in the outbox and
// reaches the core when the outbox drains.
func ExampleAdapter_ExecuteDebit() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "adapter-example-")
	defer os.RemoveAll(dir)
	core := newFakeCore() // in production: a corelink.Link to the bank's core over MQ
	core.balance["100-1-0000001"] = 10_000
	a, err := Open(ctx, Config{BankID: "001", DBPath: filepath.Join(dir, "adapter.db"), Core: core, Inquiry: core,
		Clock: clock.NewManual(start)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	a.InitializeBank(ctx, bankapi.InitializeBankRequest{})
	a.OpenAccountFromCore(ctx, Account{Hash: "h:a", CoreAccount: "100-1-0000001", HolderName: "SATO HANAKO"})

	rsv, _ := a.ReserveFunds(ctx, bankapi.ReserveFundsRequest{RequestIDValue: "r1", TxID: "TX-1",
		Amount: bankapi.Amount{Value: 4000, Currency: "JPY"}, AccountHash: "h:a"})
	d, _ := a.ExecuteDebit(ctx, bankapi.ExecuteDebitRequest{RequestIDValue: "r2", TxID: "TX-1",
		Amount: bankapi.Amount{Value: 4000, Currency: "JPY"}, DecisionProofRef: "DP-1",
		HReservation: &bankapi.HReservation{ReservationID: rsv.ReservationRef, Mode: "RESERVED"}})
	s, _ := a.Shadow(ctx, "h:a")
	fmt.Println(rsv.Result, d.Result, d.BankProofRef.ProofType)
	fmt.Println("before drain: core", core.balance["100-1-0000001"], "pending debits", s.PendingDebits, "available", s.Available)
	a.Outbox().Drain(ctx, 100)
	s, _ = a.Shadow(ctx, "h:a")
	fmt.Println("after drain:  core", core.balance["100-1-0000001"], "shadow", s.CoreBalance)
	// Output:
	// RESERVED OK PAYER_EXEC_PROOF
	// before drain: core 10000 pending debits 4000 available 6000
	// after drain:  core 6000 shadow 6000
}

// An account a teller opens without an account_hash is known to ZC by a
// hash derived from the bank and the account number.
func ExampleDeriveAccountHash() {
	fmt.Println(DeriveAccountHash("002", "100-1-0000004"))
	// Output: h:de8c10fe32c14e1ecc32a13bb4a35857
}
