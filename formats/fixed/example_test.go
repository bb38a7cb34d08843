package fixed_test

import (
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
)

type transfer struct {
	Kind    uint8    `fixed:"1,1,9,const=2" label:"データ区分"`
	Bank    string   `fixed:"2,4,9" label:"被仕向銀行番号"`
	Name    string   `fixed:"6,20,K" label:"受取人名"`
	Amount  int64    `fixed:"26,10,9" label:"振込金額"`
	Balance int64    `fixed:"36,7,S9" label:"残高"`
	Fee     int64    `fixed:"43,3,P" label:"手数料"`
	_       struct{} `fixed:"46,5,FILLER"`
}

func Example() {
	in := transfer{Bank: "0001", Name: "ヤマダ タロウ", Amount: 150000, Balance: -1234, Fee: 440}
	rec, err := fixed.Marshal(in, charset.EBCDIC290)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("% X\n", rec[:10])
	var out transfer
	if err := fixed.Unmarshal(rec, &out, charset.EBCDIC290); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", out)

	// A bad digit in the amount is an error naming the column, never a zero.
	canon, _ := fixed.Marshal(in, nil)
	canon[30] = 'A'
	err = fixed.Unmarshal(canon, &out, nil)
	var fe *fixed.Error
	if errors.As(err, &fe) {
		fmt.Println(fe.Field, fe.Column, fe.Reason, errors.Is(err, fixed.NotNumeric))
	}
	// Output:
	// F2 F0 F0 F0 F1 A9 A4 91 BE 40
	// {Kind:2 Bank:0001 Name:ﾔﾏﾀﾞ ﾀﾛｳ Amount:150000 Balance:-1234 Fee:440 _:{}}
	// Amount 31 not numeric true
}
