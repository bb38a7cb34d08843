package zclog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

var t0 = time.Date(2026, 4, 1, 0, 30, 0, 123000000, time.UTC)

func newTest(level slog.Level) (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return New(&buf, Options{Level: level, Clock: clock.NewManual(t0)}), &buf
}

type payer struct {
	BankID    string `json:"bank_id"`
	VaultRef  string `json:"vault_ref"`
	NamePII   string `json:"name_pii"`
	Password  string // no tag: the Go name is the key
	Note      string `json:"note,omitempty"`
	Skipped   string `json:"-"`
	internal  string //nolint:unused // unexported fields are never written
	Accounts  []account
	CreatedAt time.Time `json:"created_at"`
}

type account struct {
	Number string         `json:"number"`
	Secret string         `json:"secret"`
	Extra  map[string]any `json:"extra"`
}

type customJSON struct{ inner string }

func (c customJSON) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"shown": c.inner, "preimage": "deadbeef"})
}

func TestLines(t *testing.T) {
	cases := []struct {
		name string
		log  func(l *slog.Logger)
		want string
	}{
		{
			name: "fixed fields then baggage then attrs",
			log: func(l *slog.Logger) {
				WithRequest(l, "req-1").With("txid", "TX-001", "lane", "EXPRESS").Info("lane.dispatch", "amount", int64(1000))
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"lane.dispatch","request_id":"req-1","txid":"TX-001","lane":"EXPRESS","amount":1000}`,
		},
		{
			name: "no request id is null",
			log:  func(l *slog.Logger) { l.Warn("queue.ack", "attempt", 3) },
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"warn","event":"queue.ack","request_id":null,"attempt":3}`,
		},
		{
			name: "request id from context",
			log: func(l *slog.Logger) {
				l.InfoContext(ContextWithRequestID(context.Background(), "req-ctx"), "http.request", "path", "/api/transfers")
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"http.request","request_id":"req-ctx","path":"/api/transfers"}`,
		},
		{
			name: "baggage request id wins over context",
			log: func(l *slog.Logger) {
				WithRequest(l, "req-bag").InfoContext(ContextWithRequestID(context.Background(), "req-ctx"), "http.request")
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"http.request","request_id":"req-bag"}`,
		},
		{
			name: "top-level secrets redacted, case-insensitive, _pii suffix",
			log: func(l *slog.Logger) {
				l.Info("bank.call", "vault_ref", "V-1", "Password", "hunter2", "preimage", "00ff", "secret", "s", "payer_name_pii", "Yamada", "pii", "kept")
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"bank.call","request_id":null,"vault_ref":"[REDACTED]","Password":"[REDACTED]","preimage":"[REDACTED]","secret":"[REDACTED]","payer_name_pii":"[REDACTED]","pii":"kept"}`,
		},
		{
			name: "secrets in baggage and nested groups",
			log: func(l *slog.Logger) {
				l.With("secret", "bag").WithGroup("htlc").With("preimage", "p").Info("htlc.claim",
					slog.Group("payer", slog.String("bank_id", "001"), slog.Group("kyc", slog.String("address_pii", "Tokyo"), slog.Int("level", 2))),
					slog.Group("password", slog.String("a", "b")))
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"htlc.claim","request_id":null,"secret":"[REDACTED]","htlc":{"preimage":"[REDACTED]","payer":{"bank_id":"001","kyc":{"address_pii":"[REDACTED]","level":2}},"password":"[REDACTED]"}}`,
		},
		{
			name: "secrets inside maps, structs, slices and JSON marshalers",
			log: func(l *slog.Logger) {
				l.Info("vault.store",
					"payer", payer{BankID: "001", VaultRef: "V-9", NamePII: "Sato", Password: "pw", Skipped: "x", internal: "y",
						Accounts:  []account{{Number: "1234567", Secret: "s", Extra: map[string]any{"pin_pii": "0000", "branch": "101"}}},
						CreatedAt: t0},
					"meta", map[string]any{"z": 1, "deep": map[string]any{"list": []any{map[string]string{"secret": "x", "ok": "y"}}}},
					"custom", customJSON{inner: "visible"},
					"ptr", &account{Number: "9", Secret: "q"})
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"vault.store","request_id":null,` +
				`"payer":{"bank_id":"001","vault_ref":"[REDACTED]","name_pii":"[REDACTED]","Password":"[REDACTED]","Accounts":[{"number":"1234567","secret":"[REDACTED]","extra":{"branch":"101","pin_pii":"[REDACTED]"}}],"created_at":"2026-04-01T00:30:00.123000000Z"},` +
				`"meta":{"deep":{"list":[{"ok":"y","secret":"[REDACTED]"}]},"z":1},` +
				`"custom":{"preimage":"[REDACTED]","shown":"visible"},` +
				`"ptr":{"number":"9","secret":"[REDACTED]","extra":null}}`,
		},
		{
			name: "domain error flattened, details redacted",
			log: func(l *slog.Logger) {
				err := fmt.Errorf("reserve: %w", domainerr.New("H_LIMIT_EXCEEDED", "h limit exceeded",
					map[string]any{"requested": 1000, "vault_ref": "V-1"}))
				l.Error("lane.failed", "error", err)
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"error","event":"lane.failed","request_id":null,"error":{"name":"DomainError","message":"reserve: H_LIMIT_EXCEEDED: h limit exceeded","reason_code":"H_LIMIT_EXCEEDED","details":{"requested":1000,"vault_ref":"[REDACTED]"}}}`,
		},
		{
			name: "plain error flattened, error inside a map",
			log: func(l *slog.Logger) {
				l.Error("bank.error", "error", errors.New("connection reset"), "ctx", map[string]any{"cause": errors.New("eof")})
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"error","event":"bank.error","request_id":null,"error":{"name":"*errors.errorString","message":"connection reset","reason_code":null,"details":null},"ctx":{"cause":{"name":"*errors.errorString","message":"eof","reason_code":null,"details":null}}}`,
		},
		{
			name: "attributes cannot overwrite fixed fields",
			log:  func(l *slog.Logger) { l.Info("dns.kick", "event", "spoof", "level", "x") },
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"dns.kick","request_id":null,"_event":"spoof","_level":"x"}`,
		},
		{
			name: "below the level writes nothing",
			log:  func(l *slog.Logger) { l.Debug("lane.dispatch") },
			want: ``,
		},
		{
			name: "durations and nil inside a group",
			log: func(l *slog.Logger) {
				l.WithGroup("eod").Info("eod.run", "took", 1500*time.Millisecond, "none", nil)
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"eod.run","request_id":null,"eod":{"took":"1.5s","none":null}}`,
		},
		{
			name: "byte slices as base64, byte arrays as hex",
			log: func(l *slog.Logger) {
				l.Info("finality.append", "raw", []byte{1, 2, 3}, "digest", [4]byte{0xde, 0xad, 0xbe, 0xef})
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"finality.append","request_id":null,"raw":"AQID","digest":"deadbeef"}`,
		},
		{
			name: "groups without attributes are omitted",
			log: func(l *slog.Logger) {
				l.WithGroup("outer").WithGroup("inner").Info("dns.settle", slog.Group("empty"))
			},
			want: `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"dns.settle","request_id":null}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, buf := newTest(slog.LevelInfo)
			c.log(l)
			got := strings.TrimSuffix(buf.String(), "\n")
			if got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
			if c.want != "" {
				if strings.Count(buf.String(), "\n") != 1 || !json.Valid([]byte(got)) {
					t.Errorf("not exactly one valid JSON line: %q", buf.String())
				}
			}
		})
	}
}

func TestChildDoesNotLeakIntoParent(t *testing.T) {
	l, buf := newTest(slog.LevelInfo)
	parent := WithRequest(l, "req-p")
	_ = parent.With("txid", "TX-1")
	parent.Info("lane.cancel")
	want := `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"lane.cancel","request_id":"req-p"}` + "\n"
	if buf.String() != want {
		t.Errorf("got %s want %s", buf.String(), want)
	}
}

func TestConcurrentLinesDoNotInterleave(t *testing.T) {
	l, buf := newTest(slog.LevelInfo)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			child := l.With("lane", fmt.Sprintf("L%d", g))
			for i := range 50 {
				child.Info("lane.transition", "i", i)
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["event"] != "lane.transition" {
			t.Fatalf("bad line %q: %v", line, err)
		}
	}
}

func TestNewRequestID(t *testing.T) {
	re := regexp.MustCompile(`^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := NewRequestID(), NewRequestID()
	if !re.MatchString(a) || a == b {
		t.Errorf("ids %q %q", a, b)
	}
}

func TestOrDiscard(t *testing.T) {
	if OrDiscard(nil).Enabled(context.Background(), slog.LevelError) {
		t.Error("nil logger should discard")
	}
	l, _ := newTest(slog.LevelInfo)
	if OrDiscard(l) != l {
		t.Error("non-nil logger replaced")
	}
}

func TestIsSecretKey(t *testing.T) {
	for k, want := range map[string]bool{"vault_ref": true, "VAULT_REF": true, "preimage": true, "secret": true,
		"password": true, "name_pii": true, "x_PII": true, "pii": false, "secret_ref": false, "txid": false, "passwords": false} {
		if IsSecretKey(k) != want {
			t.Errorf("IsSecretKey(%q) = %v", k, !want)
		}
	}
}

func ExampleNew() {
	var buf bytes.Buffer
	log := New(&buf, Options{Clock: clock.NewManual(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))})
	child := WithRequest(log, "req-7").With("txid", "TX-001", "lane", "EXPRESS")
	child.Info("lane.dispatch", "preimage", "c0ffee")
	fmt.Print(buf.String())
	// Output:
	// {"ts":"2026-04-01T00:00:00.000000000Z","level":"info","event":"lane.dispatch","request_id":"req-7","txid":"TX-001","lane":"EXPRESS","preimage":"[REDACTED]"}
}

type posting struct {
	Ref     string `json:"ref"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// Core account numbers, balances and customer names are written
// "[REDACTED]" by key wherever they appear (spec 000 ch. 3 PII rule), and
// the keys logs correlate on (account_hash, ref, txid, amount) are kept.
func TestPIIKeysRedacted(t *testing.T) {
	l, buf := newTest(slog.LevelInfo)
	l.With("core_account", "100-1-0001234").Info("adapter.account_opened",
		"account_hash", "h:a", "opening_balance", int64(987654),
		"account", "100-1-0005678", "balance_after", int64(123456), "available_balance", int64(55),
		"holder_name", "ﾀﾅｶ ﾀﾛｳ", "Payer_Account", "100-1-0009999",
		slog.Group("core", "balance", int64(31337)),
		"detail", map[string]any{"shadow_balance": int64(42424242), "ref": "P1"},
		"posting", posting{Ref: "P2", Account: "100-1-0007777", Amount: 1200},
		"amount", int64(1200))
	want := `{"ts":"2026-04-01T00:30:00.123000000Z","level":"info","event":"adapter.account_opened","request_id":null,` +
		`"core_account":"[REDACTED]","account_hash":"h:a","opening_balance":"[REDACTED]","account":"[REDACTED]",` +
		`"balance_after":"[REDACTED]","available_balance":"[REDACTED]","holder_name":"[REDACTED]","Payer_Account":"[REDACTED]",` +
		`"core":{"balance":"[REDACTED]"},"detail":{"ref":"P1","shadow_balance":"[REDACTED]"},` +
		`"posting":{"ref":"P2","account":"[REDACTED]","amount":1200},"amount":1200}`
	if got := strings.TrimSpace(buf.String()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestIsPIIKey(t *testing.T) {
	for k, want := range map[string]bool{
		"account": true, "core_account": true, "payee_account": true, "balance": true, "balance_after": true,
		"opening_balance": true, "holder_name": true, "HOLDER_NAME": true,
		"account_hash": false, "amount": false, "holder": false, "name": false, "file": false, "txid": false,
	} {
		if IsPIIKey(k) != want {
			t.Errorf("IsPIIKey(%q) = %v", k, !want)
		}
	}
}
