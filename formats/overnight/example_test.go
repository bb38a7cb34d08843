package overnight_test

import (
	"bytes"
	"fmt"

	"github.com/zcgw/zcgw/formats/overnight"
)

// Write a posting file for the core's night batch; the trailer (counts,
// totals, hash total) is computed by the Writer.
func ExampleWriter() {
	var buf bytes.Buffer
	w := overnight.NewWriter(&buf)
	_ = w.WriteHeader(&overnight.Header{FileType: overnight.Postings, Version: 1, BankCode: "0128",
		BusinessDate: overnight.Date{Year: 2026, Month: 12, Day: 2}, FileSeq: 1, CreatedAt: "20261202213000"})
	_ = w.WritePosting(&overnight.PostingDetail{Seq: 1, Kind: overnight.Posting, Side: overnight.Debit, TxID: "TX-1", Ref: "ZC0001-D",
		Account: overnight.Account{BranchCode: "101", AccountType: 1, AccountNumber: "1234567"}, Amount: 150000,
		ValueDate: overnight.Date{Year: 2026, Month: 12, Day: 2}})
	if err := w.Close(); err != nil {
		panic(err)
	}
	sum, err := overnight.Validate(&buf)
	fmt.Println(sum.Count, sum.DebitTotal, sum.HashTotal, err)
	// Output:
	// 1 150000 1011234567 <nil>
}
