package adapterconf

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// syncBuffer is a bytes.Buffer the core's serving goroutine and the test
// may write and read at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPostingFlowLogsNoPII runs a real posting flow (accounts opened from
// the core over MQ, a refused reserve, a debit and a credit through the
// adapter, drained by the outbox over MQ to the simulated core) with the
// node's JSON logger, and checks that no core account number, balance or
// holder name appears in clear, that they are written "[REDACTED]" (spec
// 000 ch. 3), and that the lines still carry what they are found by.
func TestPostingFlowLogsNoPII(t *testing.T) {
	var buf syncBuffer
	o := defaultOptions()
	o.log = zclog.New(&buf, zclog.Options{})
	e := newEnv(t, o)
	coreA := e.account("h:a", "ﾀﾅｶ ﾀﾛｳ", 7314159)
	coreB := e.account("h:b", "ｻﾄｳ ﾊﾅｺ", 2718281)
	if r := check[bankapi.ReserveFundsResponse](t)(e.a.ReserveFunds(e.ctx, bankapi.ReserveFundsRequest{
		RequestIDValue: "q0", TxID: "TX-BIG", Amount: jpy(99999999), AccountHash: "h:a"})); r.Result == bankapi.ResultReserved {
		t.Fatalf("a reserve over the balance was accepted: %+v", r)
	}
	check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 12000)))
	check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-2", "h:b", 3000)))
	e.settle()
	if got := e.coreBalance("h:a"); got != 7302159 {
		t.Fatalf("core balance of h:a %d, want 7302159", got)
	}
	if got := e.coreBalance("h:b"); got != 2721281 {
		t.Fatalf("core balance of h:b %d, want 2721281", got)
	}
	e.stopCore()
	out := buf.String()

	for _, clear := range []string{coreA, coreB, strings.ReplaceAll(coreA, "-", ""), "0000001", "0000002",
		"7314159", "2718281", "7302159", "2721281", "ﾀﾅｶ", "ｻﾄｳ"} {
		if strings.Contains(out, clear) {
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, clear) {
					t.Errorf("%q logged in clear: %s", clear, line)
				}
			}
		}
	}
	masked := map[string][]string{ // event -> keys that must be present and "[REDACTED]"
		"adapter.account_opened":  {"core_account", "opening_balance"},
		"adapter.reserve_refused": {"available_balance"},
		"outbox.enqueue":          {"account"},
		"coresim.post":            {"account", "balance_after"},
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not one JSON object per line: %q", line)
		}
		ev, _ := m["event"].(string)
		keys, ok := masked[ev]
		if !ok {
			continue
		}
		seen[ev]++
		for _, k := range keys {
			if m[k] != zclog.Redacted {
				t.Errorf("%s: %s = %v, want %q", ev, k, m[k], zclog.Redacted)
			}
		}
		switch ev {
		case "adapter.account_opened":
			if h, _ := m["account_hash"].(string); !strings.HasPrefix(h, "h:") {
				t.Errorf("%s lost its account_hash: %s", ev, line)
			}
		case "outbox.enqueue", "coresim.post":
			if m["amount"] == nil || m["ref"] == nil || m["txid"] == nil {
				t.Errorf("%s lost amount, ref or txid: %s", ev, line)
			}
		}
	}
	for ev := range masked {
		if seen[ev] == 0 {
			t.Errorf("the flow logged no %s line; log:\n%s", ev, out)
		}
	}
	if seen["coresim.post"] != 2 || seen["outbox.enqueue"] != 2 {
		t.Errorf("coresim.post %d lines, outbox.enqueue %d lines; want 2 each", seen["coresim.post"], seen["outbox.enqueue"])
	}
}
