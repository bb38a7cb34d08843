package overnight_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/overnight/corepickup"
	"github.com/zcgw/zcgw/outbox"
)

// BenchmarkOvernightNight measures one night's exchange of N postings
// (ZCGW_OVERNIGHT_N, default 20000) over 1000 accounts, per phase:
// send = cut + render + fsync + rename + record; core = the simulated
// core's batch run (validate, post, result file); receive = validate the
// result file, settle every posting, record. Reported in records/s.
func BenchmarkOvernightNight(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("ZCGW_OVERNIGHT_N")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	var send, core, recv time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := openEnv(b, b.TempDir(), false)
		for a := 1; a <= 1000; a++ {
			if err := e.core.OpenAccount(ctx, fmt.Sprintf("200-1-%07d", a), "SUZUKI", 1_000_000_000); err != nil {
				b.Fatal(err)
			}
		}
		x, ob := e.exchange(b), e.outbox(b)
		if err := e.db.Write(ctx, func(tx *store.Tx) error {
			for k := 0; k < n; k++ {
				kind := outbox.Credit
				if k%3 == 0 {
					kind = outbox.Debit
				}
				if _, err := ob.Enqueue(ctx, tx, outbox.Posting{Ref: fmt.Sprintf("B%08d", k), TxID: fmt.Sprintf("TXB%08d", k), Bank: "001",
					Account: fmt.Sprintf("200-1-%07d", k%1000+1), Kind: kind, Amount: int64(1000 + k%500), Route: outbox.RouteFILE}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		if _, ok, err := x.Send(ctx, date); err != nil || !ok {
			b.Fatal(ok, err)
		}
		t1 := time.Now()
		if ran, err := corepickup.PickUp(ctx, e.core, e.clk, e.inbound(), e.results(), nil); err != nil || ran != 1 {
			b.Fatal(ran, err)
		}
		t2 := time.Now()
		in, ok, err := x.Receive(ctx)
		if err != nil || !ok || in.Posted+in.Rejected != n {
			b.Fatal(in, ok, err)
		}
		t3 := time.Now()
		send, core, recv = send+t1.Sub(t0), core+t2.Sub(t1), recv+t3.Sub(t2)
	}
	rate := func(d time.Duration) float64 { return float64(n*b.N) / d.Seconds() }
	b.ReportMetric(rate(send), "send-rec/s")
	b.ReportMetric(rate(core), "core-rec/s")
	b.ReportMetric(rate(recv), "receive-rec/s")
	b.ReportMetric(rate(send+core+recv), "night-rec/s")
}
