package batchwindow

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// With the real orchestrator behind the port: BULK transfers accepted by
// Submit wait as BATCH items; the window's accepted ones get their DRIVE
// item, the deferred ones keep waiting; a transfer cannot be accepted twice.
func TestWindowWithOrchestrator(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	ctx := context.Background()
	o, err := orchestrator.New(orchestrator.Config{DB: e.db, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	for id, h := range map[string]int64{"001": 10_000, "002": 1_000_000} {
		if _, err := o.Participants().Create(ctx, participants.Participant{BankID: id, BankName: "Bank " + id, HLimit: h, IsActive: true}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for i, amt := range []int64{6000, 3000, 5000} {
		res, err := o.Submit(ctx, orchestrator.PaymentInitiated{Lane: LaneBulk, Amount: bankapi.Amount{Value: amt, Currency: "JPY"},
			Payer: orchestrator.Party{BankID: "001", AccountHash: "h:a"}, Payee: orchestrator.Party{BankID: "002", AccountHash: "h:b"}},
			fmt.Sprintf("key-%d", i), "001")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.TxID)
	}
	w, err := New(Config{Gate: sysmode.Gate{}, Acceptor: o, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := e.db.Write(ctx, func(tx *store.Tx) error {
		rep, err = w.RunInTx(ctx, tx, LaneBulk, day, "BULK-20261202-0900", nine)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(rep.Accepted) != 2 || len(rep.Deferred) != 1 {
		t.Fatalf("report %+v", rep)
	}
	items := func(txid string) []string {
		qs, err := o.QueueItems(ctx, txid)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range qs {
			out = append(out, q.Kind+"/"+q.Status)
		}
		return out
	}
	for _, id := range rep.Accepted {
		if got := items(id); !reflect.DeepEqual(got, []string{"BATCH/DONE", "DRIVE/READY"}) {
			t.Errorf("%s items = %v", id, got)
		}
	}
	if got := items(rep.Deferred[0]); !reflect.DeepEqual(got, []string{"BATCH/WAITING"}) {
		t.Errorf("deferred items = %v", got)
	}
	// Accepting the same transfer again is refused.
	err = e.db.Write(ctx, func(tx *store.Tx) error { return o.AcceptBatchInTx(ctx, tx, rep.Accepted[0]) })
	if domainerr.Code(err) != "INVALID_STATE" {
		t.Fatalf("second acceptance = %v", err)
	}
}
