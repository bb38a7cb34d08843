package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/gateway"
)

// htlcCall is one answer of an /api/htlc route: the status, the view on
// success, the catalog reason_code otherwise.
type htlcCall struct {
	Status   int
	Replayed bool
	View     orchestrator.HtlcView
	Reason   string
}

// htlcPost posts body to path as bank and decodes the answer.
func (c *apiClient) htlcPost(ctx context.Context, path, bank string, body any) (htlcCall, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return htlcCall{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return htlcCall{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", c.cfg.KeyFor(bank))
	resp, err := c.http.Do(req)
	if err != nil {
		return htlcCall{}, fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return htlcCall{}, err
	}
	out := htlcCall{Status: resp.StatusCode, Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if resp.StatusCode/100 == 2 {
		err = json.Unmarshal(raw, &out.View)
	} else {
		var e struct {
			ReasonCode string `json:"reason_code"`
		}
		err = json.Unmarshal(raw, &e)
		out.Reason = e.ReasonCode
	}
	if err != nil {
		return out, fmt.Errorf("POST %s: HTTP %d: decode: %w", path, resp.StatusCode, err)
	}
	return out, nil
}

// sweep is POST /internal/cron/timeout-sweep with the cron secret.
func (c *apiClient) sweep(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/internal/cron/timeout-sweep", nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Cron-Secret", c.cfg.CronSecret)
	var v map[string]any
	_, err = c.do(req, &v)
	return err
}

// htlcSecret is the demo's preimage (hex) for label and its hashlock.
func htlcSecret(label string) (preimage, hashlock string) {
	p := sha256.Sum256([]byte("zcgw demo htlc " + label))
	h := sha256.Sum256(p[:])
	return hex.EncodeToString(p[:]), hex.EncodeToString(h[:])
}

// htlc: two HTLCs (spec 001 ch. 15). The first is locked (H and the
// payer bank's hold), refused a wrong preimage, claimed by the payee bank
// with the right one, claimed again (the same answer), and settles. The
// second is never claimed: at its timelock the timeout sweep cancels it
// and a late claim is refused. Both chains are printed; the balance, H,
// chain and event checks of the day cover them as transfers.
func (d *day) htlc() error {
	d.section("HTLC: hashlock and timelock (POST /api/htlc/create, /claim)")
	type scene struct {
		label, from, to string
		amount          int64
		timelock        time.Duration
		expect          string
	}
	var ts []*Transfer
	var views []orchestrator.HtlcView
	for _, s := range []scene{
		{"HTLC claimed with its preimage", "001/SATO", "002/YAMADA", 30_000, 2 * time.Hour, "SETTLED"},
		{"HTLC left to its timelock", "002/YAMADA", "001/SUZUKI", 9_000, 1500 * time.Millisecond, "CANCELLED"},
	} {
		_, hl := htlcSecret(s.label)
		from, to := accountByKey(s.from), accountByKey(s.to)
		key := d.nextKey()
		req := gateway.HTLCCreateRequest{IdempotencyKey: key, HtlcCreate: orchestrator.HtlcCreate{
			Amount: bankapi.Amount{Value: s.amount, Currency: "JPY"}, Purpose: "ESCROW",
			Payer: orchestrator.Party{BankID: from.Bank, AccountHash: from.Hash()}, Payee: orchestrator.Party{BankID: to.Bank, AccountHash: to.Hash()},
			HashAlg: orchestrator.HashAlgSHA256, Hashlock: hl, Timelock: clock.Stamp(d.nodeClk.Now().Add(s.timelock))}}
		r, err := d.api.htlcPost(d.ctx, "/api/htlc/create", from.Bank, req)
		if err != nil {
			return err
		}
		if r.Status != http.StatusCreated {
			return fmt.Errorf("POST /api/htlc/create %s: HTTP %d %s", key, r.Status, r.Reason)
		}
		t := &Transfer{Label: s.label, Via: ViaHTTP, TxID: r.View.TxID, Lane: orchestrator.LaneHTLC, From: s.from, To: s.to, Amount: s.amount, Expect: s.expect}
		d.transfers = append(d.transfers, t)
		ts, views = append(ts, t), append(views, r.View)
		d.printf("  POST /api/htlc/create  %-14s -> %-14s %12s  %d %s %s  hashlock %s…  timelock %s  %s\n", s.from, s.to, yen(s.amount),
			r.Status, r.View.HtlcID, t.TxID, hl[:12], r.View.Timelock, s.label)
	}
	for _, t := range ts {
		if err := d.waitState(t, "HTLC_LOCKED", 10*time.Second); err != nil {
			return err
		}
	}
	d.printf("  both HTLC_LOCKED: H reserved at ZC, the payer banks hold the funds\n")

	claimed, claimedTx := views[0], ts[0]
	pre, _ := htlcSecret(claimedTx.Label)
	path := "/api/htlc/" + claimed.HtlcID + "/claim"
	wrong, err := d.api.htlcPost(d.ctx, path, claimed.PayeeBankID, orchestrator.HtlcClaim{Preimage: strings.Repeat("00", 32)})
	if err != nil {
		return err
	}
	d.printf("  POST %s with a wrong preimage: %d %s (HtlcClaimRejected recorded; still claimable)\n", path, wrong.Status, wrong.Reason)
	if wrong.Reason != "PREIMAGE_MISMATCH" {
		return violated(InvHTLC, "a wrong preimage answered %d %s, want PREIMAGE_MISMATCH", wrong.Status, wrong.Reason)
	}
	var answers []htlcCall
	for i := 0; i < 2; i++ {
		a, err := d.api.htlcPost(d.ctx, path, claimed.PayeeBankID, orchestrator.HtlcClaim{Preimage: pre, PresenterOrgID: claimed.PayeeBankID,
			PresentedAt: clock.Stamp(d.nodeClk.Now())})
		if err != nil {
			return err
		}
		answers = append(answers, a)
		d.printf("  POST %s with the preimage: %d %s, Idempotent-Replayed %v\n", path, a.Status, a.View.TxState, a.Replayed)
	}
	if answers[0].Status != http.StatusOK || answers[0].Replayed || !answers[1].Replayed || answers[1].View.HtlcID != claimed.HtlcID {
		return violated(InvHTLC, "claim answers %+v / %+v: want one claim and one replay", answers[0], answers[1])
	}

	if err := d.pause(1600 * time.Millisecond); err != nil { // past the second HTLC's timelock
		return err
	}
	if err := d.api.sweep(d.ctx); err != nil {
		return err
	}
	expired := views[1]
	epre, _ := htlcSecret(ts[1].Label)
	late, err := d.api.htlcPost(d.ctx, "/api/htlc/"+expired.HtlcID+"/claim", expired.PayeeBankID, orchestrator.HtlcClaim{Preimage: epre})
	if err != nil {
		return err
	}
	d.printf("  timeout sweep after the second HTLC's timelock; a late claim: %d %s\n", late.Status, late.Reason)
	if late.Reason != "EXPIRED" {
		return violated(InvHTLC, "a claim after the timelock answered %d %s, want EXPIRED", late.Status, late.Reason)
	}
	if err := d.wait(20*time.Second, ts...); err != nil {
		return err
	}
	d.printFinal(ts...)
	for i, t := range ts {
		evs, err := d.api.events(d.ctx, t.TxID)
		if err != nil {
			return err
		}
		var chain []string
		fulfil := 0
		for _, e := range evs {
			chain = append(chain, e.EventType)
			if e.EventType == "HtlcFulfillRequested" {
				fulfil++
			}
		}
		d.printf("  chain %s: %s\n", t.TxID, strings.Join(chain, " > "))
		want := 1
		if i == 1 {
			want = 0
		}
		if fulfil != want || t.State != t.Expect {
			return violated(InvHTLC, "%s ended %s with %d HtlcFulfillRequested entries, want %s with %d", t.TxID, t.State, fulfil, t.Expect, want)
		}
	}
	return nil
}

// waitState polls until t reaches state (or a final state, which is an
// error when it is not state).
func (d *day) waitState(t *Transfer, state string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		q, err := d.api.transaction(d.ctx, t.TxID)
		if err != nil {
			return err
		}
		if q.State == state {
			return nil
		}
		if final(q.State) || time.Now().After(deadline) {
			return violated(InvTransfersFinal, "%s is %s %s, want %s", t.TxID, q.State, q.ReasonCode, state)
		}
		if err := d.pause(20 * time.Millisecond); err != nil {
			return err
		}
	}
}
