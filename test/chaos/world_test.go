package chaos_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/gateway/node"
)

// The world of the run: three real-time banks, each with three funded
// customers and one nearly empty one (it only ever pays, and each of its
// transfers is more than it holds: the refusals on purpose).
const (
	richOpening = 100_000_000
	poorOpening = 1_000
	poorAmount  = 1_000_000 // > poorOpening: INSUFFICIENT_FUNDS
)

var bankIDs = []string{"001", "002", "003"}

// account is one customer of the world.
type account struct {
	Bank, Hash, Core, Name string
	Opening                int64
	PSPR                   string // payee reference registered for it ("" none)
}

// key is the account's identity at its core ("bank/core account").
func (a account) key() string { return a.Bank + "/" + a.Core }

type world struct {
	cfg      node.Config
	accounts []account
	rich     []account // payers and payees of the transfers meant to settle
	poor     []account // payers of the transfers meant to be refused
	byPSPR   map[string]account
}

func newWorld() *world {
	w := &world{byPSPR: map[string]account{}}
	w.cfg = node.Config{CronSecret: "chaos-cron-secret", Workers: 4}
	w.cfg.APIKeys = append(w.cfg.APIKeys, node.APIKey{Scope: signing.ScopeOperator, Name: "operator", Secret: node.Secret{Current: "chaos-operator-key"}})
	for _, id := range bankIDs {
		b := node.BankConfig{BankID: id, Name: "Chaos Bank " + id, HLimit: 10_000_000_000_000, RealTime: true}
		for n := 1; n <= 4; n++ {
			a := account{Bank: id, Hash: fmt.Sprintf("h:%s-%04d", id, n), Core: fmt.Sprintf("100-1-%07d", n),
				Name: fmt.Sprintf("CHAOS %s %d", id, n), Opening: richOpening}
			if n == 1 {
				a.PSPR = "PSPR-CHAOS-" + id
				w.byPSPR[a.PSPR] = a
			}
			if n == 4 {
				a.Opening = poorOpening
				w.poor = append(w.poor, a)
			} else {
				w.rich = append(w.rich, a)
			}
			w.accounts = append(w.accounts, a)
			na := node.Account{Hash: a.Hash, CoreAccount: a.Core, Name: a.Name, Balance: a.Opening}
			if a.PSPR != "" {
				na.PSPRRefs = []string{a.PSPR}
			}
			b.Accounts = append(b.Accounts, na)
		}
		w.cfg.Banks = append(w.cfg.Banks, b)
		w.cfg.APIKeys = append(w.cfg.APIKeys, node.APIKey{Scope: signing.ScopeParticipant, BankID: id, Name: "bank-" + id,
			Secret: node.Secret{Current: "chaos-key-" + id}})
	}
	return w
}

// bojOpening is each bank's opening BOJ position (node.json leaves it to
// the default).
const bojOpening = bankapi.DefaultBOJPrefund

// jobsJSON keeps the repeating recovery jobs of `zcgw serve` (timeout
// sweep, outbox drain, Case SLA) and turns off the jobs bound to a time of
// the JST day (DNS, windows, overnight, EOD) and every catch-up, so that a
// run does the same whatever the hour it starts at.
const jobsJSON = `{
  "catch_up_max_days": 0,
  "jobs": {
    "idempotency-ttl-cleanup": {"enabled": false},
    "bulk-window": {"enabled": false},
    "deferred-window": {"enabled": false},
    "dns-intraday-cutoff": {"enabled": false},
    "dns-kick": {"enabled": false},
    "dns-settle": {"enabled": false},
    "overnight-send": {"enabled": false},
    "overnight-receive": {"enabled": false},
    "eod": {"enabled": false},
    "jobs-ledger-prune": {"enabled": false}
  }
}
`

// writeConfig writes node.json and jobs.json into a fresh data folder.
func (w *world) writeConfig(dir string) error {
	b, err := json.MarshalIndent(w.cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, node.ConfigFile), append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "jobs.json"), []byte(jobsJSON), 0o600)
}
