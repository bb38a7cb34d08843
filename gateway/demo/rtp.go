package demo

import (
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/gateway"
)

// rtpScene: a café (002/KOBAYASHI) sends two requests to pay to a
// customer of bank 001 (POST /api/rtp/request); ZC delivers rtp-notify to
// 001's adapter, which keeps it for its core. The customer accepts the
// first (POST /api/rtp/{rtp_id}/accept): its transfer is created, linked
// to the request, runs the RTP lane and settles, and the request
// completes. The second is declined and nothing moves.
func (d *day) rtpScene() error {
	d.section("RTP: request to pay (POST /api/rtp/request, rtp-notify to the payer's bank)")
	payer, shop := accountByKey("001/SATO"), accountByKey("002/KOBAYASHI")
	for _, s := range []struct {
		id, label, answer, want string
		amount                  int64
	}{
		{"RTP-002-DEMO-1", "café bill, accepted", "accept", "COMPLETED", 3_800},
		{"RTP-002-DEMO-2", "second bill, declined", "decline", "DECLINED", 1_200},
	} {
		var v orchestrator.RtpView
		status, err := d.api.postAs(d.ctx, shop.Bank, "/api/rtp/request", gateway.RtpRequestBody{RtpRequest: orchestrator.RtpRequest{
			RtpID: s.id, PayerBankID: payer.Bank, PayeeAccountHash: shop.Hash(), Amount: bankapi.Amount{Value: s.amount, Currency: "JPY"},
			ExpiresAt: clock.Stamp(d.nodeClk.Now().Add(time.Hour)), PayeeName: "KOBAYASHI CAFE", Description: s.label}, IdempotencyKey: s.id}, &v)
		if err != nil {
			return err
		}
		d.printf("  POST /api/rtp/request %s %s -> payer bank %s %10s: %d %s  %s\n", s.id, shop.Key, payer.Bank, yen(s.amount), status, v.State, s.label)
		if err := pollUntil(d, 20*time.Second, "/api/rtp/"+s.id, &v, func(v *orchestrator.RtpView) bool { return v.State != "CREATED" }); err != nil {
			return err
		}
		d.printf("  %s %s after %d rtp-notify attempt(s) of %d\n", s.id, v.State, v.AttemptCount, v.MaxAttempts)
		var body any = struct{}{}
		if s.answer == "accept" {
			body = orchestrator.RtpAccept{PayerAccountHash: payer.Hash()}
		}
		if status, err = d.api.postAs(d.ctx, payer.Bank, "/api/rtp/"+s.id+"/"+s.answer, body, &v); err != nil {
			return err
		}
		d.printf("  POST /api/rtp/%s/%s as bank %s: %d %s %s\n", s.id, s.answer, payer.Bank, status, v.State, v.LinkedTxID)
		if v.LinkedTxID != "" {
			t := &Transfer{Label: "RTP " + s.id, Via: ViaHTTP, TxID: v.LinkedTxID, Lane: orchestrator.LaneRtp, From: payer.Key, To: shop.Key,
				Amount: s.amount, Expect: "SETTLED"}
			d.transfers = append(d.transfers, t)
			if err := d.wait(20*time.Second, t); err != nil {
				return err
			}
			d.printFinal(t)
		}
		if err := pollUntil(d, 20*time.Second, "/api/rtp/"+s.id, &v, func(v *orchestrator.RtpView) bool { return v.State == s.want }); err != nil {
			return err
		}
		reason := ""
		if v.ReasonCode != "" {
			reason = " reason " + v.ReasonCode
		}
		d.printf("  %s %s%s\n", s.id, v.State, reason)
		d.printChain(s.id, v.Chain)
	}
	return nil
}
