package filedrop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"

	"github.com/zcgw/zcgw/formats/zengin"
)

// BenchmarkDropToAccepted measures records per second from a dropped
// Zengin file (complete, with its done-marker) to every transfer accepted
// by the real orchestrator (BULK, RECEIVED, queued for the batch window):
// claim, SHA-256, whole-file validation, one SubmitBulk (one commit) per
// Chunk records (the default). The database is a fresh coordinator database
// on disk (synchronous=FULL). Records default to 10,000;
// FILEDROP_BENCH_RECORDS=100000 runs the 100,000-record figure of
// docs/filedrop.md.
func BenchmarkDropToAccepted(b *testing.B) {
	n := 10_000
	if s := os.Getenv("FILEDROP_BENCH_RECORDS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	rs := make([]rec, n)
	for i := range rs {
		rs[i] = rec{bank: "0002", acct: fmt.Sprintf("%07d", i), amount: int64(1000 + i%1000), name: "ﾔﾏﾀﾞ ﾀﾛｳ"}
	}
	data := zenginFile(b, zengin.KindTransfer, "0001", rs)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newFixture(b, func(c *Config) { c.Chunk = 0 })
		f.drop("BENCH.txt", data)
		b.StartTimer()
		pass, err := f.p.PollOnce(f.ctx)
		b.StopTimer()
		if err != nil || pass.Accepted != 1 {
			b.Fatalf("pass %+v, %v", pass, err)
		}
		if got := f.count(`SELECT COUNT(*) FROM Transactions WHERE state = 'RECEIVED'`); got != n {
			b.Fatalf("transfers = %d, want %d", got, n)
		}
		b.StartTimer()
	}
	rate := float64(n) * float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "records/s")
	raw := rawInsertLoop(b, data)
	b.ReportMetric(raw, "raw-records/s")
	b.ReportMetric(rate/raw, "of-raw")
}

// rawInsertLoop is the floor the drop is compared with, run on the same
// file right after it: parse the file, map each record to its
// PaymentInitiated (txid, key, account hashes, JSON body) and write one
// row per record into a bare table (txid primary key, key unique) of a
// fresh coordinator database, by multi-row INSERTs, one commit
// (synchronous=FULL) per DefaultChunk records. It returns records/s.
func rawInsertLoop(b *testing.B, data []byte) float64 {
	b.Helper()
	f := newFixture(b, nil)
	if err := f.db.Write(f.ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(f.ctx, `CREATE TABLE RawTransfers (txid TEXT PRIMARY KEY, idempotency_key TEXT UNIQUE NOT NULL,
			payer_account_hash TEXT NOT NULL, payee_bank_id TEXT NOT NULL, payee_account_hash TEXT NOT NULL, amount_value INTEGER NOT NULL,
			request_json TEXT NOT NULL)`)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	cols := []string{"txid", "idempotency_key", "payer_account_hash", "payee_bank_id", "payee_account_hash", "amount_value", "request_json"}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	start := time.Now()
	var h *zengin.Header
	var rows [][]any
	n, records := 0, 0
	flush := func() {
		if err := f.db.Write(f.ctx, func(tx *store.Tx) error {
			for lo := 0; lo < len(rows); lo += 128 {
				part := rows[lo:min(lo+128, len(rows))]
				var args []any
				for _, r := range part {
					args = append(args, r...)
				}
				if _, err := tx.ExecContext(f.ctx, store.InsertRows("RawTransfers", cols, len(part)), args...); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		rows = rows[:0]
	}
	for rec, err := range zengin.NewReader(bytes.NewReader(data)).Records() {
		if err != nil {
			b.Fatal(err)
		}
		n++
		if hd, ok := rec.(*zengin.Header); ok {
			h = hd
			continue
		}
		acc, amount, ok := dataAccount(rec)
		if !ok {
			continue
		}
		records++
		req := payment((&Config{AccountSalt: DefaultAccountSalt}).accountHash, hash, n, h, "001", "002", acc, amount)
		body, err := json.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, []any{req.TxID, IdempotencyKey(hash, n), req.Payer.AccountHash, req.Payee.BankID, req.Payee.AccountHash, amount, string(body)})
		if len(rows) == DefaultChunk {
			flush()
		}
	}
	flush()
	return float64(records) / time.Since(start).Seconds()
}

// BenchmarkCheck100k measures what the file drop adds before the first
// submit on a 100,000-record file: SHA-256 and both validation passes.
func BenchmarkCheck100k(b *testing.B) {
	const n = 100_000
	rs := make([]rec, n)
	for i := range rs {
		rs[i] = rec{bank: "0002", acct: fmt.Sprintf("%07d", i), amount: int64(1000 + i%1000), name: "ﾔﾏﾀﾞ ﾀﾛｳ"}
	}
	data := zenginFile(b, zengin.KindTransfer, "0001", rs)
	f := newFixture(b, nil)
	bank, _ := f.p.Bank("001")
	file := mustTemp(data)
	defer file.Close()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := hashFile(file); err != nil {
			b.Fatal(err)
		}
		if _, err := f.p.check(f.ctx, bank, file, map[string]string{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
