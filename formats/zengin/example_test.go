package zengin_test

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/zcgw/zcgw/formats/zengin"
)

// Apply a Zengin file all or nothing: validate the whole file first, then
// rewind and stream the records to apply them. Memory stays constant
// whatever the file size.
func Example_validateThenApply() {
	f, err := os.Open("../../fixtures/zengin/transfer.txt")
	if err != nil {
		panic(err)
	}
	defer f.Close()

	sum, err := zengin.Validate(f)
	if err != nil {
		fmt.Println("refused:", err) // nothing applied
		return
	}
	fmt.Printf("%d groups, %d transfers, %d yen\n", sum.GroupCount, sum.DataCount, sum.DataTotal)

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		panic(err)
	}
	for rec, err := range zengin.NewReader(f).Records() {
		if err != nil {
			panic(err) // cannot happen after a clean Validate unless the file changed
		}
		if d, ok := rec.(*zengin.TransferData); ok {
			fmt.Printf("pay %s-%s %s %q %d\n", d.BankCode, d.BranchCode, d.AccountNumber, d.Name, d.Amount)
		}
	}
	// Output:
	// 1 groups, 3 transfers, 10000150000 yen
	// pay 0001-110 7654321 "ﾔﾏﾀﾞ ﾀﾛｳ" 150000
	// pay 0005-001 1111111 "(ｶ)ﾃｽﾄ.ｼﾖｳｶｲ" 9999999999
	// pay 0009-220 2222222 "ｽｽﾞｷ ﾊﾅｺ" 1
}

// A corrupted file: every error names record, line, byte offset, field
// and the offending bytes.
func ExampleValidate() {
	b, _ := os.ReadFile("../../fixtures/zengin/transfer.txt")
	b = bytes.Clone(b)
	b[122+84] = 'A' // a letter inside the amount of record 2
	_, err := zengin.Validate(bytes.NewReader(b))
	fmt.Println(err)
	// Output:
	// 1 error(s)
	//   record 2 (zengin.data.transfer) field Amount (振込金額) column 85 offset 206: not numeric: bytes "0000A50000": line 2: 'A' (0x41) at column 85: 9(10) must be digits only
}

// Write a file in canonical form: CRLF after every record, trailer
// computed.
func ExampleWriter() {
	var out bytes.Buffer
	w := zengin.NewWriter(&out)
	_ = w.WriteHeader(&zengin.Header{Kind: zengin.KindTransfer, ClientCode: "42", ClientName: "ｾﾞﾆｽ", Date: zengin.Date{Month: 4, Day: 15},
		BankCode: "0128", BankName: "ｸﾞﾝﾏ", BranchCode: "101", BranchName: "ﾎﾝﾃﾝ", AccountType: 1, AccountNumber: "1234567"})
	_ = w.WriteData(&zengin.TransferData{Account: zengin.Account{BankCode: "0001", BranchCode: "110", AccountType: 1,
		AccountNumber: "7654321", Name: "ヤマダ　タロウ"}, Amount: 150000, TransferMode: 7})
	_ = w.WriteTrailer()
	_ = w.WriteEnd()
	if err := w.Flush(); err != nil {
		panic(err)
	}
	sum, err := zengin.Validate(&out)
	fmt.Println(sum.Records, sum.DataTotal, sum.Separator, err)
	// Output:
	// 4 150000 CRLF <nil>
}
