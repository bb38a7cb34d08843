package dns

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/lane"
)

func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		body string
		want Request
		code string
	}{
		{"", Request{}, ""},
		{"  {} ", Request{}, ""},
		{`{"business_date":"2026-12-02","currency":"USD"}`, Request{BusinessDate: "2026-12-02", Currency: "USD"}, ""},
		{`{"cycle_id":"DNS-JPY-20261202-01"}`, Request{CycleID: "DNS-JPY-20261202-01"}, ""},
		{`{"cycle_id":"DNS-2026"}`, Request{}, "INVALID_REQUEST"},
		{`{"business_date":"12/02/2026"}`, Request{}, "INVALID_REQUEST"},
		{`{"currency":"yen"}`, Request{}, "INVALID_CURRENCY"},
		{`{"extra":1}`, Request{}, "INVALID_REQUEST"},
		{`{"cycle_id":1}`, Request{}, "INVALID_REQUEST"},
		{`{} {}`, Request{}, "INVALID_REQUEST"},
		{`{"cycle_id":`, Request{}, "INVALID_REQUEST"},
	} {
		got, err := DecodeRequest([]byte(tc.body))
		if domainerr.Code(err) != tc.code || got != tc.want {
			t.Errorf("DecodeRequest(%q) = %+v, %v; want %+v %s", tc.body, got, err, tc.want, tc.code)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{"", "{}", `{"cycle_id":"DNS-JPY-20261202-01"}`, `{"business_date":"2026-02-30"}`, `{"currency":"JPY"} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			if _, ok := domainerr.As(err); !ok {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if r.CycleID != "" {
			if _, _, _, err := ParseCycleID(r.CycleID); err != nil {
				t.Fatalf("accepted bad cycle id %q", r.CycleID)
			}
		}
	})
}

func FuzzParseCycleID(f *testing.F) {
	for _, s := range []string{"DNS-JPY-20261202-01", "DNS-USD-20260229-99", "DNS-JPY-20261202-00", "", "DNS-JPY-2026120-01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ccy, date, seq, err := ParseCycleID(s)
		if err != nil {
			return
		}
		back, err := CycleID(ccy, date, seq)
		if err != nil || back != s {
			t.Fatalf("ParseCycleID(%q) = %s %s %d does not round-trip (%q, %v)", s, ccy, date, seq, back, err)
		}
	})
}

func TestHandler(t *testing.T) {
	e := newEnv(t, 2)
	e.settledTx(t, "EXPRESS", "001", "002", 3000, lane.Settled)
	e.svc.Fund(t.Context(), "001", "JPY", 1000)
	h := e.svc.Handler()
	call := func(method, path, body string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s: %s", method, path, rec.Body.String())
		}
		return rec.Code, out
	}
	code, out := call("POST", "/internal/dns/kick", "")
	if code != 200 || out["cycle_id"] != "DNS-JPY-20261202-01" || out["tx_count"] != float64(1) || out["applied"] != true {
		t.Fatalf("kick = %d %v", code, out)
	}
	code, out = call("POST", "/internal/dns/settle", `{"cycle_id":"DNS-JPY-20261202-01"}`)
	if code != 200 || out["state"] != "HOLD_ACTIVE" || out["igs_mode"] != "RINGFENCED" || out["public_message_id"] != "DNS_HOLD_2026-12-02" {
		t.Fatalf("settle = %d %v", code, out)
	}
	code, out = call("POST", "/internal/dns/resume", `{}`)
	if code != 400 || out["reason_code"] != "MISSING_FIELD" {
		t.Fatalf("resume without cycle = %d %v", code, out)
	}
	e.svc.Fund(t.Context(), "001", "JPY", 2000)
	code, out = call("POST", "/internal/dns/resume", `{"cycle_id":"DNS-JPY-20261202-01"}`)
	if code != 200 || out["state"] != "SETTLED" || out["applied"] != true {
		t.Fatalf("resume = %d %v", code, out)
	}
	code, out = call("GET", "/internal/boj-positions", "")
	if code != 200 {
		t.Fatalf("positions = %d", code)
	}
	pos, _ := json.Marshal(out["positions"])
	if string(pos) != `[{"balance":0,"bank_id":"001","currency":"JPY","updated_at":"2026-12-02T07:00:00.000000000Z","venue":"BOJ"},{"balance":3000,"bank_id":"002","currency":"JPY","updated_at":"2026-12-02T07:00:00.000000000Z","venue":"BOJ"}]` {
		t.Fatalf("positions = %s", pos)
	}
	code, out = call("POST", "/internal/dns/intraday-cutoff", `{"business_date":"2026-12-02"}`)
	if code != 200 || out["cycle_id"] != "DNS-JPY-20261202-02" || out["next_cycle_id"] != "DNS-JPY-20261202-03" {
		t.Fatalf("cutoff = %d %v", code, out)
	}
	code, out = call("POST", "/internal/dns/settle", `{"cycle_id":"DNS-JPY-20261202-09"}`)
	if code != http.StatusNotFound || out["reason_code"] != "NOT_FOUND" {
		t.Fatalf("settle unknown = %d %v", code, out)
	}
}
