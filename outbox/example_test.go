package outbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// exampleCore applies every posting and remembers it.
type exampleCore struct{ seen map[string]bool }

func (c *exampleCore) Apply(ctx context.Context, p outbox.Posting) (outbox.ApplyResult, error) {
	c.seen[p.Ref] = true
	return outbox.ApplyResult{CoreRef: "J-" + p.Ref}, nil
}

func (c *exampleCore) Lookup(ctx context.Context, ref string) (outbox.LookupResult, error) {
	if c.seen[ref] {
		return outbox.LookupResult{State: outbox.LookupApplied}, nil
	}
	return outbox.LookupResult{State: outbox.LookupUnknown}, nil
}

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "outbox-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "adapter.db"), outbox.Schema)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ob, _ := outbox.New(outbox.Config{DB: db, Core: &exampleCore{seen: map[string]bool{}}})

	// The adapter queues the posting in the same transaction as its own change.
	err = db.Write(ctx, func(tx *store.Tx) error {
		_, err := ob.Enqueue(ctx, tx, outbox.Posting{Ref: "PST-0001", TxID: "TX-1", Bank: "001",
			Account: "1234567", Kind: outbox.Debit, Amount: 5000})
		return err
	})
	if err != nil {
		panic(err)
	}
	res, _ := ob.Drain(ctx, 100)
	fmt.Println("applied:", res.Applied)
	rows, _ := ob.List(ctx, outbox.Filter{TxID: "TX-1"})
	fmt.Println(rows[0].Posting.Ref, rows[0].Status, rows[0].CoreRef)
	// Output:
	// applied: 1
	// PST-0001 APPLIED J-PST-0001
}
