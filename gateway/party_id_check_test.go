package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// GET /api/gtid, /api/rtp, /api/htlc and /api/fx/transfers refuse an id no
// resource can have (its ident kind: charset, length) with 400
// INVALID_REQUEST naming the path field, before any lookup (the audit row
// says INVALID_REQUEST, not the route's NOT_FOUND), as /api/transactions
// does; a well-formed unknown id is still the owner's 404.
func TestPartyQueryIDFormatBeforeLookup(t *testing.T) {
	real := newRealFixture(t)
	fxf := newFixture(t, func(c *Config) { c.FX = newFXService(c) })
	long := func(n int) string { return strings.Repeat("A", n) }
	for _, c := range []struct {
		name     string
		f        *fixture
		route    string // "/api/gtid/"
		id       string // as sent (escaped)
		field    string // "" : well-formed, want notFound
		notFound string
	}{
		{"gtid space", real, "/api/gtid/", "G%201", "gtid", "GTID_NOT_FOUND"},
		{"gtid colon", real, "/api/gtid/", "G%3A1", "gtid", "GTID_NOT_FOUND"},
		{"gtid 33 bytes", real, "/api/gtid/", long(33), "gtid", "GTID_NOT_FOUND"},
		{"gtid unknown", real, "/api/gtid/", long(32), "", "GTID_NOT_FOUND"},
		{"rtp space", real, "/api/rtp/", "RTP-002%20X", "rtp_id", "RTP_NOT_FOUND"},
		{"rtp 129 bytes", real, "/api/rtp/", long(129), "rtp_id", "RTP_NOT_FOUND"},
		{"rtp unknown (a colon is a ref)", real, "/api/rtp/", "RTP-002%3AX", "", "RTP_NOT_FOUND"},
		{"htlc quote", real, "/api/htlc/", "HTLC-%27x", "htlc_id", "HTLC_NOT_FOUND"},
		{"htlc 33 bytes", real, "/api/htlc/", long(33), "htlc_id", "HTLC_NOT_FOUND"},
		{"htlc unknown", real, "/api/htlc/", "HTLC-0123456789abcdef01234567", "", "HTLC_NOT_FOUND"},
		{"fx colon", fxf, "/api/fx/transfers/", "G%3A1", "gtid", "GTID_NOT_FOUND"},
		{"fx 33 bytes", fxf, "/api/fx/transfers/", long(33), "gtid", "GTID_NOT_FOUND"},
		{"fx unknown", fxf, "/api/fx/transfers/", "G1", "", "GTID_NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(c.f.auditRows())
			r := c.f.do("GET", c.route+c.id, map[string]string{"X-Api-Key": key001, HeaderPurposeCode: "P01"}, "")
			wantStatus, wantCode := http.StatusBadRequest, "INVALID_REQUEST"
			if c.field == "" {
				wantStatus, wantCode = http.StatusNotFound, c.notFound
			}
			if r.status != wantStatus || r.code(t) != wantCode {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, wantStatus, wantCode)
			}
			if c.field != "" {
				if d, _ := r.json(t)["details"].(map[string]any); d["field"] != c.field {
					t.Fatalf("details %v, want field %s", r.json(t)["details"], c.field)
				}
			}
			rows := c.f.auditRows()[before:]
			if len(rows) != 1 || rows[0].Decision != Deny || rows[0].ReasonCode != wantCode {
				t.Fatalf("audit %+v, want one Deny %s", rows, wantCode)
			}
		})
	}
}
