package eod

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// vmHWM reads the process's peak resident set (kB) from /proc.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmHWM:") {
			n, _ := strconv.ParseInt(strings.Fields(s.Text())[1], 10, 64)
			return n
		}
	}
	return 0
}

// resetHWM resets the peak RSS (Linux clear_refs 5), so each step's peak
// is its own.
func resetHWM() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// scaleFixture fills zc.db, two adapters and their cores with
// ZCGW_EOD_ACCOUNTS accounts and ZCGW_EOD_POSTINGS postings of the day
// (APPLIED outbox rows, Transactions rows and one FinalityLog entry each),
// with bulk SQL inserts (fixture only: the benchmark measures EOD, not the
// loading).
func scaleFixture(b testing.TB, accounts, postings int) (*fixture, Config) {
	ctx := context.Background()
	f := &fixture{dir: b.TempDir(), clk: clock.NewManual(eodTime), cores: map[string]*coresim.Core{}}
	var err error
	path := ledger.Path(f.dir)
	if f.db, err = store.OpenCoordinator(ctx, path); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.db.Close() })
	if f.led, err = ledger.Open(ctx, path, f.clk); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.led.Close() })
	banks := []string{"001", "002"}
	perBank := accounts / len(banks)
	dayStart := time.Date(2026, 12, 1, 0, 0, 0, 0, clock.JST)
	exec := func(db *store.DB, q string, n int, args func(i int) []any) {
		const batch = 20000
		for lo := 0; lo < n; lo += batch {
			if err := db.Write(ctx, func(tx *store.Tx) error {
				st, err := tx.PrepareContext(ctx, q)
				if err != nil {
					return err
				}
				defer st.Close()
				for i := lo; i < min(lo+batch, n); i++ {
					if _, err := st.ExecContext(ctx, args(i)...); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(q, err)
			}
		}
	}
	stamp := func(i int) string { return clock.Stamp(dayStart.Add(time.Duration(i%80000) * time.Second)) }
	exec(f.db, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, registered_at, daily_amount_used, daily_amount_last_reset_date)
		VALUES (?, ?, ?, '2026-01-01T00:00:00Z', 1000, '2026-12-01')`, len(banks), func(i int) []any {
		return []any{banks[i], "Bank " + banks[i], "/bank/" + banks[i]}
	})
	// The day's postings go in through the lane primitive, like every
	// writer of Transactions (coordinator/lane's static guard), in batches
	// of 20,000 per commit, spread over the business day.
	lanes := lane.New(f.db, finality.New(f.clk), sysmode.Gate{}, f.clk, nil)
	for lo := 0; lo < postings; lo += 20000 {
		if err := f.db.Write(ctx, func(tx *store.Tx) error {
			for i := lo; i < min(lo+20000, postings); i++ {
				f.clk.Set(dayStart.Add(time.Duration(i%80000) * time.Second))
				txid := fmt.Sprintf("TX%09d", i)
				if _, err := lanes.InsertTxInTx(ctx, tx, lane.NewTx{TxID: txid, Lane: "STANDARD", AmountValue: 100,
					PayerBankID: "001", PayerAccountHash: "h", PayeeBankID: "002", PayeeAccountHash: "h2", IdempotencyKey: "IK" + txid}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	f.clk.Set(eodTime)
	cs := cases.New(f.clk, nil, 0)
	for bi, bank := range banks {
		core, err := coresim.Open(ctx, coresim.Config{Bank: bank, DBPath: filepath.Join(f.dir, "core-"+bank+".db"), Clock: f.clk})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { core.Close() })
		a, err := adapter.Open(ctx, adapter.Config{BankID: bank, DBPath: filepath.Join(f.dir, "adapter-"+bank+".db"),
			Core: directCore{core}, Inquiry: directCore{core}, Cases: adapter.CoordinatorCases{DB: f.db, Cases: cs}, Clock: f.clk})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { a.Close() })
		f.banks = append(f.banks, a)
		f.cores[bank] = core
		acct := func(i int) string { return fmt.Sprintf("%03d-1-%07d", 100+bi, i) }
		myPostings := postings / len(banks)
		credits := func(i int) int64 { // credits of account i: postings k with k % perBank == i
			n := myPostings / perBank
			if i < myPostings%perBank {
				n++
			}
			return int64(n) * 100
		}
		blocked := map[int]int64{}
		for k := 9999; k < myPostings; k += 10000 {
			blocked[k%perBank] += 100
		}
		exec(core.DB(), `INSERT INTO CoreAccounts (account, name, balance, status, opened_at, updated_at) VALUES (?, 'YAMADA', ?, 'OPEN', ?, ?)`,
			perBank, func(i int) []any { return []any{acct(i), 1_000_000 + credits(i) - blocked[i], stamp(0), stamp(0)} })
		exec(a.DB(), `INSERT INTO AdapterAccounts (account_hash, core_account, holder_name, status, opening_balance, created_at, updated_at)
			VALUES (?, ?, 'YAMADA', 'ACTIVE', 1000000, ?, ?)`, perBank, func(i int) []any {
			return []any{bank + ":" + strconv.Itoa(i), acct(i), stamp(0), stamp(0)}
		})
		exec(a.DB(), `INSERT INTO AdapterOutbox (id, ref, txid, bank, account, kind, amount, status, sends, created_at, updated_at, applied_at)
			VALUES (?, ?, ?, ?, ?, 'CREDIT', 100, ?, 1, ?, ?, ?)`, myPostings, func(k int) []any {
			st := "APPLIED"
			if k%10000 == 9999 { // a few refused by the core: exceptions
				st = "BLOCKED"
			}
			ref := fmt.Sprintf("R%s%09d", bank, k)
			return []any{k + 1, ref, fmt.Sprintf("TX%09d", k*len(banks)+bi), bank, acct(k % perBank), st, stamp(k), stamp(k), stamp(k)}
		})
		exec(a.DB(), `INSERT INTO AdapterPostings (ref, outbox_id, txid, account_hash, kind, direction, amount, request_id, created_at)
			VALUES (?, ?, ?, ?, 'CREDIT', 1, 100, ?, ?)`, myPostings, func(k int) []any {
			ref := fmt.Sprintf("R%s%09d", bank, k)
			return []any{ref, k + 1, fmt.Sprintf("TX%09d", k*len(banks)+bi), bank + ":" + strconv.Itoa(k%perBank), "RQ" + ref, stamp(k)}
		})
	}
	return f, Config{DB: f.db, Banks: f.banks, DataDir: f.dir, Cases: cs, Clock: f.clk, BalanceFile: f.dropBalanceFile}
}

// BenchmarkEOD runs the whole EOD job over ZCGW_EOD_ACCOUNTS accounts
// (default 2000) and ZCGW_EOD_POSTINGS postings of the day (default
// 20000) and reports each step's wall time (ms, from the job ledger) and
// peak RSS (MB, VmHWM reset before each step). The scale:
//
//	ZCGW_EOD_ACCOUNTS=100000 ZCGW_EOD_POSTINGS=1000000 go test -run '^$' -bench EOD -benchtime 1x -timeout 60m ./jobs/eod
func BenchmarkEOD(b *testing.B) {
	accounts, postings := envInt("ZCGW_EOD_ACCOUNTS", 2000), envInt("ZCGW_EOD_POSTINGS", 20000)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f, cfg := scaleFixture(b, accounts, postings)
		peak := map[string]int64{}
		took := map[string]time.Duration{}
		var began time.Time
		cfg.crash = func(p string) error {
			step, at, _ := strings.Cut(p, ":")
			if at == "before" {
				resetHWM()
				began = time.Now()
			} else {
				took[step] = time.Since(began)
				peak[step] = vmHWM()
			}
			return nil
		}
		r := f.runner(b, cfg)
		b.StartTimer()
		res, err := r.Run(context.Background(), scheduler.Request{Job: JobName, BusinessDate: day})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		var total time.Duration
		for _, s := range res.Steps {
			ms := took[s.Name].Milliseconds()
			b.ReportMetric(float64(ms), s.Name+"-ms")
			b.ReportMetric(float64(peak[s.Name])/1024, s.Name+"-peakMB")
			total += took[s.Name]
			b.Logf("%-18s %7d ms  peak RSS %6.1f MB  %s", s.Name, ms, float64(peak[s.Name])/1024, s.Summary)
		}
		b.Logf("EOD total %d ms for %d accounts, %d postings", total.Milliseconds(), accounts, postings)
	}
}
