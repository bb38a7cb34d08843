package corebalance

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
)

const fixtureDir = "../../fixtures/corebalance"

func golden(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "balances.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var goldenDetails = []Detail{
	{Seq: 1, Account: coreacct.Key{Branch: "100", Type: 1, Number: "0000001"}, Status: Open, Balance: 1_000_000},
	{Seq: 2, Account: coreacct.Key{Branch: "100", Type: 1, Number: "0000002"}, Status: Open, Balance: 0},
	{Seq: 3, Account: coreacct.Key{Branch: "100", Type: 2, Number: "0000001"}, Status: Open, Balance: 250_000},
	{Seq: 4, Account: coreacct.Key{Branch: "101", Type: 1, Number: "1234567"}, Status: Closed, Balance: 0},
	{Seq: 5, Account: coreacct.Key{Branch: "330", Type: 9, Number: "9999999"}, Status: Open, Balance: 999_999_999_999},
}

var goldenHeader = Header{Version: 1, BankCode: "0128", BusinessDate: Date{Year: 2026, Month: 12, Day: 2}, CutoffAt: "20261202233000"}

// The golden file (written by fixtures/corebalance/gen.py, not by this
// package) validates, reads back to the expected records, and the Writer
// reproduces it byte for byte.
func TestGolden(t *testing.T) {
	b := golden(t)
	sum, err := Validate(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	hash := int64(0)
	total := int64(0)
	for _, d := range goldenDetails {
		total += d.Balance
		hash += hashOf([]byte(d.Account.Branch), []byte(d.Account.Number))
	}
	want := Summary{Records: 7, Bytes: int64(len(b)), Separator: recordio.SepCRLF, Header: goldenHeader,
		Count: 5, BalanceTotal: total, HashTotal: hash, Trailer: true}
	if sum != want {
		t.Fatalf("summary\n got %+v\nwant %+v", sum, want)
	}
	var got []Detail
	var out bytes.Buffer
	w := NewWriter(&out)
	for rec, err := range NewReader(bytes.NewReader(b)).Records() {
		if err != nil {
			t.Fatal(err)
		}
		switch r := rec.(type) {
		case *Header:
			if *r != goldenHeader {
				t.Fatalf("header %+v", *r)
			}
			if err := w.WriteHeader(r); err != nil {
				t.Fatal(err)
			}
		case *Detail:
			got = append(got, *r)
			if err := w.WriteDetail(r); err != nil {
				t.Fatal(err)
			}
		case *Trailer:
			if *r != (Trailer{Count: 5, BalanceTotal: total, HashTotal: hash}) {
				t.Fatalf("trailer %+v", *r)
			}
		}
	}
	if !reflect.DeepEqual(got, goldenDetails) {
		t.Fatalf("details\n got %+v\nwant %+v", got, goldenDetails)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), b) {
		t.Fatalf("rewritten file differs from the golden one:\n%q\n%q", out.Bytes(), b)
	}
}

// replace returns the golden file with record rec (1-based) changed at
// 1-based column col.
func replace(t *testing.T, rec, col int, with string) []byte {
	b := append([]byte(nil), golden(t)...)
	off := (rec-1)*(RecordLen+2) + col - 1
	copy(b[off:], with)
	return b
}

// Every refusal names the record, the field and why.
func TestValidateRefusals(t *testing.T) {
	cases := []struct {
		name      string
		file      []byte
		record    int
		field, in string
	}{
		{"file type", replace(t, 1, 2, "POST"), 1, "FileType", "CBAL"},
		{"business date", replace(t, 1, 12, "20261302"), 1, "BusinessDate", "YYYYMMDD"},
		{"cutoff", replace(t, 1, 20, "20261202243000"), 1, "CutoffAt", "YYYYMMDDhhmmss"},
		{"seq gap", replace(t, 3, 2, "00000003"), 3, "Seq", "want 2"},
		{"account type", replace(t, 2, 13, "3"), 2, "AccountType", "1, 2, 4 or 9"},
		{"status", replace(t, 2, 21, "X"), 2, "Status", "O or C"},
		{"duplicate account", replace(t, 3, 14, "0000001"), 3, "AccountNumber", "ascend"},
		{"descending account", replace(t, 4, 10, "099"), 4, "AccountNumber", "ascend"},
		{"balance not digits", replace(t, 2, 30, "12A"), 2, "Balance", ""},
		{"balance total", replace(t, 7, 10, "000000000000000001"), 7, "BalanceTotal", "sum of balances"},
		{"count", replace(t, 7, 2, "00000004"), 7, "Count", "number of details"},
		{"hash total", replace(t, 7, 28, "000000000000001"), 7, "HashTotal", "hash total"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Validate(bytes.NewReader(c.file))
			var list *fixed.ErrorList
			if !errors.As(err, &list) || len(list.Errs) == 0 {
				t.Fatalf("err = %v, want a *fixed.ErrorList", err)
			}
			e := list.Errs[0]
			if e.Record != c.record || e.Field != c.field || !strings.Contains(e.Error(), c.in) {
				t.Fatalf("error %q (record %d, field %q), want record %d field %q containing %q", e.Error(), e.Record, e.Field, c.record, c.field, c.in)
			}
		})
	}
	b := golden(t)
	if _, err := Validate(bytes.NewReader(b[:len(b)-(RecordLen+2)])); err == nil || !strings.Contains(err.Error(), "missing trailer") {
		t.Fatalf("no trailer: %v", err)
	}
	if _, err := Validate(bytes.NewReader(nil)); err == nil || !strings.Contains(err.Error(), "empty file") {
		t.Fatalf("empty: %v", err)
	}
}

// The Writer refuses what the Reader would refuse: accounts out of order
// or twice, a bad status, a negative balance.
func TestWriterRefuses(t *testing.T) {
	start := func() *Writer {
		w := NewWriter(&bytes.Buffer{})
		h := goldenHeader
		if err := w.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := start()
	d := goldenDetails[1]
	if err := w.WriteDetail(&d); err != nil {
		t.Fatal(err)
	}
	d0 := goldenDetails[0]
	if err := w.WriteDetail(&d0); err == nil || !strings.Contains(err.Error(), "not after") {
		t.Fatalf("out of order: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after a refused detail must fail")
	}
	w = start()
	if err := w.WriteDetail(&Detail{Account: d.Account, Status: 'X'}); err == nil || !strings.Contains(err.Error(), "Status") {
		t.Fatalf("bad status: %v", err)
	}
	w = start()
	if err := w.WriteDetail(&Detail{Account: d.Account, Status: Open, Balance: -1}); err == nil || !strings.Contains(err.Error(), "Balance") {
		t.Fatalf("negative balance: %v", err)
	}
}
