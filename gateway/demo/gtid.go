package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/gateway"
)

// postAs POSTs body to path with bank's API key and decodes the answer
// into out; it returns the HTTP status.
func (c *apiClient) postAs(ctx context.Context, bank, path string, body, out any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", c.cfg.KeyFor(bank))
	resp, err := c.do(req, out)
	if err != nil {
		return 0, fmt.Errorf("POST %s as %s: %w", path, bank, err)
	}
	return resp.StatusCode, nil
}

// printChain prints an aggregate chain (a GTID's or an RTP request's).
func (d *day) printChain(id string, chain []orchestrator.ChainEntry) {
	d.printf("    chain %s:\n", id)
	for _, e := range chain {
		from := e.StateFrom
		if from == "" {
			from = "-"
		}
		d.printf("      #%-4d %-20s %-20s -> %s\n", e.EventSeq, e.EventType, from, e.StateTo)
	}
}

// pollUntil reads path as the operator into v until done(v), for at most
// limit of real time.
func pollUntil[T any](d *day, limit time.Duration, path string, v *T, done func(*T) bool) error {
	deadline := time.Now().Add(limit)
	for {
		if err := d.api.get(d.ctx, path, v); err != nil {
			return err
		}
		if done(v) {
			return nil
		}
		if time.Now().After(deadline) {
			return violated(InvTransfersFinal, "%s did not reach its final state within %s: %+v", path, limit, *v)
		}
		if err := d.pause(20 * time.Millisecond); err != nil {
			return err
		}
	}
}

// gtidScene: two banks register all-or-nothing multi-leg transactions
// (POST /api/gtid/register). ZC asks every leg's bank leg-ready-check; the
// first GTID's legs are all ready and settle together, each pair as a
// GTID-lane transfer; the second has a payer leg without the funds and is
// cancelled whole, its other payer's hold released.
func (d *day) gtidScene() error {
	d.section("GTID: all-or-nothing multi-leg transactions (POST /api/gtid/register)")
	leg := func(id, role, key string, amount int64) orchestrator.GtidLegRequest {
		a := accountByKey(key)
		return orchestrator.GtidLegRequest{LegID: id, Role: role, BankID: a.Bank, AccountHash: a.Hash(), Amount: bankapi.Amount{Value: amount, Currency: "JPY"}}
	}
	type scene struct {
		gtid, label string
		legs        []orchestrator.GtidLegRequest
		pairs       [][3]string // payer leg, payer key, payee key
		want        string
	}
	for _, s := range []scene{
		{"001-GT-DEMO-1", "2x2: every leg ready, settled together", []orchestrator.GtidLegRequest{
			leg("P1", bankapi.RolePayer, "001/SATO", 30_000), leg("E1", bankapi.RolePayee, "002/YAMADA", 30_000),
			leg("P2", bankapi.RolePayer, "002/KOBAYASHI", 12_000), leg("E2", bankapi.RolePayee, "001/SUZUKI", 12_000)},
			[][3]string{{"P1", "001/SATO", "002/YAMADA"}, {"P2", "002/KOBAYASHI", "001/SUZUKI"}}, "GT_SETTLED"},
		{"001-GT-DEMO-2", "a payer leg lacks the funds: nothing moves", []orchestrator.GtidLegRequest{
			leg("P1", bankapi.RolePayer, "001/SUZUKI", 5_000), leg("E1", bankapi.RolePayee, "002/YAMADA", 5_000),
			leg("P2", bankapi.RolePayer, "001/TANAKA", 50_000), leg("E2", bankapi.RolePayee, "002/KOBAYASHI", 50_000)}, nil, "GT_CANCELLED"},
	} {
		var res orchestrator.GtidRegisterResult
		status, err := d.api.postAs(d.ctx, "001", "/api/gtid/register",
			gateway.GtidRegisterRequest{GtidRegister: orchestrator.GtidRegister{GTID: s.gtid, Legs: s.legs}, IdempotencyKey: s.gtid}, &res)
		if err != nil {
			return err
		}
		d.printf("  POST /api/gtid/register %s (%d legs): %d %s  %s\n", res.GTID, res.LegCount, status, res.State, s.label)
		var v orchestrator.GtidView
		if err := pollUntil(d, 20*time.Second, "/api/gtid/"+s.gtid, &v, func(v *orchestrator.GtidView) bool {
			return v.State == "GT_SETTLED" || v.State == "GT_CANCELLED"
		}); err != nil {
			return err
		}
		reason := ""
		if v.ReasonCode != "" {
			reason = " reason " + v.ReasonCode
		}
		d.printf("  %s %s%s (legs ready %d, settled %d of %d)\n", v.GTID, v.State, reason, v.LegsReadyCount, v.LegsSettledCount, v.LegCount)
		for _, l := range v.Legs {
			d.printf("    leg %-3s %-5s bank %s %10s  %-13s ready-check %s%s  %s %s\n", l.LegID, l.Role, l.BankID, yen(l.Amount.Value), l.State,
				l.ReadyResult, map[bool]string{true: " " + l.ReadyReason, false: ""}[l.ReadyReason != ""], l.TxID, l.TxState)
		}
		d.printChain(v.GTID, v.Chain)
		if v.State != s.want {
			return violated(InvTransfersFinal, "GTID %s ended %s, want %s", v.GTID, v.State, s.want)
		}
		// The leg transfers join the day's transfers: the balance, H and
		// chain checks cover them.
		for _, p := range s.pairs {
			txid := bankapi.LegTxID(s.gtid, p[0])
			var amount int64
			for _, l := range v.Legs {
				if l.LegID == p[0] {
					amount = l.Amount.Value
				}
			}
			t := &Transfer{Label: "GTID leg " + p[0] + " of " + s.gtid, Via: ViaHTTP, TxID: txid, Lane: orchestrator.LaneGtid,
				From: p[1], To: p[2], Amount: amount, Expect: "SETTLED"}
			d.transfers = append(d.transfers, t)
			if err := d.wait(20*time.Second, t); err != nil {
				return err
			}
		}
	}
	return nil
}
