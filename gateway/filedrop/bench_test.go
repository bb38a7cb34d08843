package filedrop

import (
	"fmt"
	"os"
	"strconv"
	"testing"

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
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
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
