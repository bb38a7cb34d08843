package mandate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/mandate"
	"github.com/zcgw/zcgw/coordinator/store"
)

// A bank lets an agent pay merchants up to 50,000 per transfer, and the
// agent delegates a narrower sub-mandate to a shop integration. A 30,000
// transfer under the sub-mandate passes both links; 40,000 breaks the
// sub-mandate's limit.
func ExampleMandates_Check() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "mandate-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "zc.db"), store.Schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	ms := mandate.New(db, clock.NewManual(time.Date(2026, 12, 3, 10, 0, 0, 0, clock.JST)))
	limit := func(v int64) *int64 { return &v }
	if _, err := ms.Create(ctx, mandate.Mandate{MandateID: "MANDATE-AGENT", PayerBankID: "001", GranteeRef: "agent-7",
		MaxAmount: limit(50_000), AllowedPurposes: []string{"MERCHANT"}}, "BANK_001"); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := ms.Create(ctx, mandate.Mandate{MandateID: "MANDATE-SHOP", ParentMandateID: "MANDATE-AGENT", PayerBankID: "001",
		GranteeRef: "agent-7:shop", MaxAmount: limit(30_000), AllowedPurposes: []string{"MERCHANT"}}, "BANK_001"); err != nil {
		fmt.Println(err)
		return
	}
	for _, amount := range []int64{30_000, 40_000} {
		v, err := ms.Check(ctx, mandate.Request{MandateID: "MANDATE-SHOP", PayerBankID: "001", Amount: amount, Purpose: "MERCHANT", Lane: "EXPRESS"})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d: allowed=%v %s %s\n", amount, v.Allowed, v.ReasonCode, v.Why)
	}
	// Output:
	// 30000: allowed=true  every link of the 2-link chain allows the transfer
	// 40000: allowed=false MANDATE_BREACH MANDATE-SHOP: amount 40000 exceeds max_amount 30000
}
