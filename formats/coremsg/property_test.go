package coremsg

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
)

// Property: Decode(Encode(m)) == m for random valid postings, balances and
// AML requests, in EBCDIC and Shift_JIS.
func TestPropertyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(42))
	kana := []rune("ｱｲｳｴｵｶｷｸｹｺｻｼｽｾｿﾀﾁﾂﾃﾄﾅﾆﾇﾈﾉﾊﾋﾌﾍﾎﾏﾐﾑﾒﾓﾔﾕﾖﾗﾘﾙﾚﾛﾜｦﾝﾞﾟｰ ABCXYZ0123()-./")
	name := func(max int) string {
		n := 1 + r.Intn(max)
		out := make([]rune, n)
		for i := range out {
			out[i] = kana[r.Intn(len(kana))]
		}
		for len(out) > 0 && out[len(out)-1] == ' ' {
			out = out[:len(out)-1]
		}
		if len(out) == 0 {
			out = []rune{'ｱ'}
		}
		return string(out)
	}
	digits := func(n int) string { return fmt.Sprintf("%0*d", n, r.Int63n(pow10(n))) }
	money := func(d int) int64 { return r.Int63n(pow10(d)) }
	signed := func(d int) int64 {
		v := money(d)
		if r.Intn(2) == 0 {
			v = -v
		}
		return v
	}
	types := []uint8{1, 2, 4, 9}
	for i := 0; i < 3000; i++ {
		h := Header{RequestID: fmt.Sprintf("req-%d", r.Int63()), TxID: fmt.Sprintf("TX-%d", r.Int63()),
			BankCode: digits(4), Timestamp: fmt.Sprintf("2026%02d%02d%02d%02d%02d%03d", 1+r.Intn(12), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), r.Intn(1000))}
		var b Body
		switch i % 3 {
		case 0:
			kind := []string{"D", "C", "V"}[r.Intn(3)]
			orig := ""
			if kind == "V" {
				orig = "ORIG-" + digits(10)
			}
			b = &PostingRequest{Kind: kind, PostingRef: "PST-" + digits(12), OriginalRef: orig, Branch: digits(3),
				AccountType: types[r.Intn(4)], AccountNo: digits(7), Amount: 1 + money(14), Currency: "JPY",
				ValueDate: fmt.Sprintf("2026%02d%02d", 1+r.Intn(12), 1+r.Intn(28)), Memo: name(20)}
		case 1:
			h.ReturnCode = []uint16{0, 4, 8, 12, 16}[r.Intn(5)]
			b = &BalanceReply{Branch: digits(3), AccountType: types[r.Intn(4)], AccountNo: digits(7),
				AccountStatus: []string{"N", "F", "H", "C", "X"}[r.Intn(5)], Ledger: signed(15), Available: signed(15),
				HeldTotal: money(15), Currency: "JPY", AsOf: fmt.Sprintf("2026%02d%02d%02d%02d%02d", 1+r.Intn(12), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60))}
		case 2:
			b = &AMLScreenRequest{CheckType: []string{"I", "R"}[r.Intn(2)], Branch: digits(3), AccountType: types[r.Intn(4)],
				AccountNo: digits(7), Name: name(30), Amount: 1 + money(14), Currency: "JPY", CounterpartyBank: digits(4),
				CounterpartyName: name(30)}
		}
		m := Message{Header: h, Body: b}
		for _, cs := range []*charset.Charset{charset.EBCDIC290, charset.ShiftJIS} {
			raw, err := Encode(&m, cs)
			if err != nil {
				t.Fatalf("Encode(%+v): %v", b, err)
			}
			got, err := Decode(raw, cs)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if want := filled(m); !reflect.DeepEqual(*got, want) {
				t.Fatalf("got %+v want %+v", *got, want)
			}
		}
	}
}

func pow10(n int) int64 {
	v := int64(1)
	for ; n > 0; n-- {
		v *= 10
	}
	return v
}
