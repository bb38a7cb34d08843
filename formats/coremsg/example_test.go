package coremsg_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/coremsg"
	"github.com/zcgw/zcgw/formats/fixed"
)

func Example() {
	sent := time.Date(2026, 12, 2, 1, 15, 0, 123e6, time.UTC)
	req := &coremsg.Message{
		Header: coremsg.Header{RequestID: "6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e", TxID: "TX-20261202-000123",
			BankCode: "0005", Timestamp: coremsg.FormatTimestamp(sent)},
		Body: &coremsg.PostingRequest{Kind: "D", PostingRef: "PST-1", Branch: "123", AccountType: 1,
			AccountNo: "1234567", Amount: 1200, Currency: "JPY", ValueDate: "20261202", Memo: "ｿｳｷﾝ"},
	}
	raw, err := coremsg.Encode(req, charset.EBCDIC290)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes, type % X, amount % X\n", len(raw), raw[:4], raw[196:204])

	m, err := coremsg.Decode(raw, charset.EBCDIC290)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := m.Body.(*coremsg.PostingRequest)
	fmt.Println(m.Header.MsgType, m.Header.Timestamp, p.Kind, p.Amount, p.Memo)

	raw[199] = 0xAB // corrupt a packed digit of the amount
	_, err = coremsg.Decode(raw, charset.EBCDIC290)
	var fe *fixed.Error
	if errors.As(err, &fe) {
		fmt.Println(fe.Field, fe.Offset, fe.Reason)
	}
	// Output:
	// 240 bytes, type D7 E2 E3 D8, amount 00 00 00 00 00 01 20 0C
	// PSTQ 20261202101500123 D 1200 ｿｳｷﾝ
	// Amount 199 bad packed decimal
}
