package overnight_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"
	ofile "github.com/zcgw/zcgw/formats/overnight"
	"github.com/zcgw/zcgw/jobs/overnight/corepickup"
	"github.com/zcgw/zcgw/outbox"
)

// BenchmarkOvernightNight measures one night's exchange of N postings
// (ZCGW_OVERNIGHT_N, default 20000) over 1000 accounts, per phase:
// send = cut + render + fsync + rename + record; core = the simulated
// core's batch run (validate, post, result file); receive = validate the
// result file, settle every posting, record. Reported in records/s, with
// raw (rawLoop on the same file, same run), the ratio night/raw, the
// night's records per CPU second of the process (night-rec/cpu-s) and the
// same ratio in CPU seconds (night/raw-cpu: steadier on a loaded machine);
// and each phase's CPU per record (send-, core-, receive-cpu-µs/rec: the
// process's CPU while the phase ran, the simulated core included).
func BenchmarkOvernightNight(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("ZCGW_OVERNIGHT_N")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	var send, core, recv, raw, cpu, rawCPU, sendCPU, coreCPU, recvCPU time.Duration
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
		t0, c0 := time.Now(), cpuTime(b)
		f, ok, err := x.Send(ctx, date)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		t1, c1 := time.Now(), cpuTime(b)
		if ran, err := corepickup.PickUp(ctx, e.core, e.clk, e.inbound(), e.results(), nil); err != nil || ran != 1 {
			b.Fatal(ran, err)
		}
		t2, c2 := time.Now(), cpuTime(b)
		in, ok, err := x.Receive(ctx)
		if err != nil || !ok || in.Posted+in.Rejected != n {
			b.Fatal(in, ok, err)
		}
		t3, c3 := time.Now(), cpuTime(b)
		cpu += c3 - c0
		sendCPU, coreCPU, recvCPU = sendCPU+c1-c0, coreCPU+c2-c1, recvCPU+c3-c2
		send, core, recv = send+t1.Sub(t0), core+t2.Sub(t1), recv+t3.Sub(t2)
		r0, rc0 := time.Now(), cpuTime(b)
		rawLoop(b, filepath.Join(e.inbound(), corepickup.Processed, f.Name))
		raw, rawCPU = raw+time.Since(r0), rawCPU+cpuTime(b)-rc0
	}
	rate := func(d time.Duration) float64 { return float64(n*b.N) / d.Seconds() }
	b.ReportMetric(rate(send), "send-rec/s")
	b.ReportMetric(rate(core), "core-rec/s")
	b.ReportMetric(rate(recv), "receive-rec/s")
	b.ReportMetric(rate(send+core+recv), "night-rec/s")
	b.ReportMetric(rate(raw), "raw-rec/s")
	b.ReportMetric(rate(cpu), "night-rec/cpu-s")
	perRec := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n*b.N) }
	b.ReportMetric(perRec(sendCPU), "send-cpu-µs/rec")
	b.ReportMetric(perRec(coreCPU), "core-cpu-µs/rec")
	b.ReportMetric(perRec(recvCPU), "receive-cpu-µs/rec")
	b.ReportMetric(raw.Seconds()/(send+core+recv).Seconds(), "night/raw")
	b.ReportMetric(rawCPU.Seconds()/cpu.Seconds(), "night/raw-cpu")
}

// cpuTime is the process's user+system CPU time so far: under a loaded
// machine the night's CPU seconds vary far less than its wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rawLoop is the yardstick measured in the same run: the night's posting
// file read and each detail written as one row by a prepared INSERT, all
// in one durable transaction of a fresh database (the floor of any
// exchange that writes a row per record).
func rawLoop(b *testing.B, path string) {
	b.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), "raw.db"),
		"CREATE TABLE IF NOT EXISTS raw (seq INTEGER PRIMARY KEY, ref TEXT NOT NULL, account TEXT NOT NULL, amount INTEGER NOT NULL);")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	fh, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	if err := db.Write(ctx, func(tx *store.Tx) error {
		for rec, err := range ofile.NewReader(bufio.NewReader(fh)).Records() {
			if err != nil {
				return err
			}
			if d, ok := rec.(*ofile.PostingDetail); ok {
				if _, err := tx.ExecContext(ctx, `INSERT INTO raw (seq, ref, account, amount) VALUES (?, ?, ?, ?)`,
					d.Seq, d.Ref, d.AccountNumber, d.Amount); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
}
