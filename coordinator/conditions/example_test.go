package conditions_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/conditions"
	"github.com/zcgw/zcgw/coordinator/store"
)

// A delivery-versus-payment style release: the payment may go once the
// other transfer settled, or after a JST deadline with two of three
// attesters' PASS. Here the clock is before the deadline and nothing has
// settled, so the expression is not met; each clause says why.
func ExampleEvaluator_Evaluate() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "conditions-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "zc.db"), store.Schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	clk := clock.NewManual(time.Date(2026, 12, 3, 10, 0, 0, 0, clock.JST))
	tpls := conditions.NewTemplates(db, clk)
	for _, t := range []conditions.Template{
		{TemplateID: "TPL-TX2-SETTLED", LedgerPredicate: &conditions.Predicate{Type: conditions.TxReachedState, TxID: "TX-2", States: []string{"SETTLED"}}},
		{TemplateID: "TPL-AFTER-NOON", LedgerPredicate: &conditions.Predicate{Type: conditions.TimeAfter, At: "2026-12-03T12:00"}},
	} {
		if _, err := tpls.Register(ctx, t); err != nil {
			fmt.Println(err)
			return
		}
	}
	ev := conditions.NewEvaluator(db, clk, nil)
	d, err := ev.Evaluate(ctx, `{"op":"OR","operands":[{"template_id":"TPL-TX2-SETTLED"},{"template_id":"TPL-AFTER-NOON"}]}`,
		conditions.Inputs{Subject: "HTLC-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("allowed:", d.Allowed, "at", d.EvaluatedAtJST)
	for _, r := range d.Reasons {
		fmt.Printf("%s %s %v: %s\n", r.Path, r.Kind, r.Value, r.Why)
	}
	// Output:
	// allowed: false at 2026-12-03T10:00:00+09:00
	// $ OR false: 0 of 2 operands true, 1 needed
	// $.operands[0] TEMPLATE false: TX_REACHED_STATE TX-2 has not reached any of [SETTLED]
	// $.operands[1] TEMPLATE false: TIME_AFTER 2026-12-03T12:00: now 2026-12-03T10:00:00+09:00 >= at is false
}
