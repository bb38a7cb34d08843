package demo

import (
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
)

// Ways a transfer entered the system.
const (
	ViaHTTP = "HTTP"
	ViaFile = "FILE"
)

// Transfer is one transfer of the day and how it ended.
type Transfer struct {
	Label  string // what the script meant it to show
	Via    string // HTTP or FILE
	TxID   string
	Lane   string
	From   string // account key
	To     string // account key
	Amount int64
	Expect string // the final state the script expects (SETTLED or CANCELLED)

	State  string
	Reason string
	CaseID string
}

// send posts one transfer over HTTP as its payer bank and records it.
func (d *day) send(label, lane, fromKey, toKey string, amount int64, expect string) (*Transfer, error) {
	key := d.nextKey()
	r, err := d.api.transfer(d.ctx, lane, key, accountByKey(fromKey), accountByKey(toKey), amount)
	return d.record(r, err, label, lane, fromKey, toKey, amount, expect)
}

// sendByRef posts an EXPRESS transfer to toKey's payee reference, with no
// payee account_hash: the payee bank resolves it.
func (d *day) sendByRef(label, fromKey, toKey string, amount int64, expect string) (*Transfer, error) {
	to := accountByKey(toKey)
	r, err := d.api.transferByRef(d.ctx, d.nextKey(), accountByKey(fromKey), to, amount)
	return d.record(r, err, label+": payee given as pspr_ref "+to.PSPR+" only", orchestrator.LaneExpress, fromKey, toKey, amount, expect)
}

func (d *day) nextKey() string { return fmt.Sprintf("demo-%02d", len(d.transfers)+1) }

// record keeps a posted transfer and prints its line.
func (d *day) record(r postResult, err error, label, lane, fromKey, toKey string, amount int64, expect string) (*Transfer, error) {
	if err != nil {
		return nil, err
	}
	t := &Transfer{Label: label, Via: ViaHTTP, TxID: r.Body.TxID, Lane: r.Body.Lane, From: fromKey, To: toKey, Amount: amount, Expect: expect}
	d.transfers = append(d.transfers, t)
	d.printf("  POST /api/transfers %-9s %-14s -> %-14s %12s  %d %s  %s\n", lane, fromKey, toKey, yen(amount), r.Status, t.TxID, label)
	return t, nil
}

// final reports whether a state ends a transfer.
func final(state string) bool { return state == "SETTLED" || state == "CANCELLED" }

// wait polls GET /api/transactions/{txid} until every given transfer is
// final, for at most limit of real time (the simulated clock moves with
// real time meanwhile, so retry backoffs elapse).
func (d *day) wait(limit time.Duration, ts ...*Transfer) error {
	deadline := time.Now().Add(limit)
	for {
		pending := 0
		for _, t := range ts {
			if final(t.State) {
				continue
			}
			q, err := d.api.transaction(d.ctx, t.TxID)
			if err != nil {
				return err
			}
			t.State, t.Reason, t.CaseID = q.State, q.ReasonCode, q.Case.CaseID
			if !final(t.State) {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var open []string
			for _, t := range ts {
				if !final(t.State) {
					open = append(open, fmt.Sprintf("%s %s %s", t.TxID, t.State, t.Reason))
				}
			}
			return violated(InvTransfersFinal, "%d transfers not final after %s: %v", pending, limit, open)
		}
		if err := d.pause(20 * time.Millisecond); err != nil {
			return err
		}
	}
}

// printFinal prints the final state of transfers.
func (d *day) printFinal(ts ...*Transfer) {
	for _, t := range ts {
		extra := ""
		if t.Reason != "" {
			extra = " reason " + t.Reason
		}
		if t.CaseID != "" {
			extra += " case " + t.CaseID
		}
		d.printf("  %s %-9s %-14s -> %-14s %12s  %s%s\n", t.TxID, t.Lane, t.From, t.To, yen(t.Amount), t.State, extra)
	}
}

// morning: the real-time banks send transfers over HTTP, one of them
// twice with the same idempotency key, one without the funds, one to an
// account that does not exist.
func (d *day) morning() error {
	d.section("morning: transfers over HTTP (POST /api/transfers, each bank with its API key)")
	var ts []*Transfer
	for _, s := range []struct {
		label, lane, from, to string
		amount                int64
		expect                string
	}{
		{"payment", orchestrator.LaneExpress, "001/SATO", "002/YAMADA", 120_000, "SETTLED"},
		{"payment with name and authority checks", orchestrator.LaneStandard, "002/YAMADA", "001/SUZUKI", 45_000, "SETTLED"},
		{"to the batch-window bank", orchestrator.LaneExpress, "001/SUZUKI", "003/KATO", 8_000, "SETTLED"},
		{"payer lacks the funds", orchestrator.LaneExpress, "001/TANAKA", "002/KOBAYASHI", 50_000, "CANCELLED"},
		{"payee account does not exist", orchestrator.LaneStandard, "002/KOBAYASHI", "002/UNKNOWN", 3_000, "CANCELLED"},
	} {
		t, err := d.send(s.label, s.lane, s.from, s.to, s.amount, s.expect)
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	byRef, err := d.sendByRef("merchant payment, the payee bank resolves the account", "001/SATO", "002/KOBAYASHI", 2_400, "SETTLED")
	if err != nil {
		return err
	}
	// The same request again: the same transfer, answered from the
	// idempotency store.
	first := ts[0]
	r, err := d.api.transfer(d.ctx, orchestrator.LaneExpress, "demo-01", accountByKey(first.From), accountByKey(first.To), first.Amount)
	if err != nil {
		return err
	}
	d.printf("  POST /api/transfers again with key demo-01: %d, Idempotent-Replayed %v, txid %s\n", r.Status, r.Replayed, r.Body.TxID)
	if r.Body.TxID != first.TxID || !r.Replayed {
		return violated(InvIdempotentReplay, "replay of demo-01 gave txid %s replayed=%v, want %s replayed", r.Body.TxID, r.Replayed, first.TxID)
	}
	ts = append(ts, byRef)
	if err := d.wait(20*time.Second, ts...); err != nil {
		return err
	}
	d.printf("  final states (GET /api/transactions/{txid}):\n")
	d.printFinal(ts...)
	return nil
}
