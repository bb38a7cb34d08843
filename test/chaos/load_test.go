package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/gateway"
)

// Kinds of transfer the clients send, and what each must end as.
const (
	kindExpress  = "EXPRESS"          // rich → rich: SETTLED
	kindStandard = "STANDARD"         // rich → rich with authority and name checks: SETTLED
	kindByRef    = "EXPRESS-PSPR"     // payee named by pspr_ref only: SETTLED to the registered account
	kindPoor     = "EXPRESS-NO-FUNDS" // the poor account pays more than it holds: CANCELLED / INSUFFICIENT_FUNDS
	kindInvalid  = "INVALID"          // amount 0: refused at once (4xx), never accepted
)

// answer is one HTTP answer to a POST /api/transfers.
type answer struct {
	Status   int
	Body     []byte
	Replayed bool
}

// sent is one transfer a client sent, with every answer it got.
type sent struct {
	Key    string
	Kind   string
	Payer  account
	Payee  account // for kindByRef, the account the reference is registered for
	Amount int64
	Body   []byte // the exact request body, resent byte for byte on every retry

	mu        sync.Mutex
	Answers   []answer
	TransErrs int // attempts that got no HTTP answer (node dead, connection reset)
	LastErr   string
}

// accepted is the first 2xx answer (nil: never accepted).
func (s *sent) accepted() *answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.Answers {
		if s.Answers[i].Status/100 == 2 {
			return &s.Answers[i]
		}
	}
	return nil
}

// definitive reports whether the transfer got an answer that ends it: a
// 2xx, or a 4xx other than 429.
func (s *sent) definitive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.Answers {
		if a.Status/100 == 2 || (a.Status/100 == 4 && a.Status != http.StatusTooManyRequests) {
			return true
		}
	}
	return false
}

// txid of the accepted answer ("" none).
func (s *sent) txid() string {
	a := s.accepted()
	if a == nil {
		return ""
	}
	var r orchestrator.SubmitResult
	if json.Unmarshal(a.Body, &r) != nil {
		return ""
	}
	return r.TxID
}

// load is the clients of one run.
type load struct {
	w      *world
	base   string
	seed   uint64
	http   *http.Client
	mu     sync.Mutex
	all    []*sent
	perCli int // transfers per client at most
}

func newLoad(w *world, base string, seed uint64, perClient int) *load {
	return &load{w: w, base: base, seed: seed, perCli: perClient,
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
}

// next draws client c's n-th transfer from its own seeded stream.
func (l *load) next(rng *rand.Rand, c, n int) *sent {
	s := &sent{Key: fmt.Sprintf("chaos-%d-c%d-%05d", l.seed, c, n), Amount: 1 + rng.Int64N(50_000)}
	pick := func(from []account) account { return from[rng.IntN(len(from))] }
	s.Payer = pick(l.w.rich)
	for s.Payee = pick(l.w.rich); s.Payee == s.Payer; s.Payee = pick(l.w.rich) {
	}
	pi := orchestrator.PaymentInitiated{Lane: orchestrator.LaneExpress, Purpose: "P2P", ClientRef: s.Key, SchemaVersion: gateway.SchemaCurrent}
	switch r := rng.IntN(100); {
	case r < 72:
		s.Kind = kindExpress
	case r < 82:
		s.Kind, pi.Lane = kindStandard, orchestrator.LaneStandard
	case r < 92:
		s.Kind, pi.Purpose = kindByRef, "MERCHANT"
		for s.Payee = l.w.byPSPR["PSPR-CHAOS-"+bankIDs[rng.IntN(len(bankIDs))]]; s.Payee == s.Payer; {
			s.Payee = l.w.byPSPR["PSPR-CHAOS-"+bankIDs[rng.IntN(len(bankIDs))]]
		}
		pi.PSPRRef = s.Payee.PSPR
	case r < 97:
		s.Kind, s.Payer, s.Amount = kindPoor, pick(l.w.poor), poorAmount
	default:
		s.Kind, s.Amount = kindInvalid, 0
	}
	pi.Amount = bankapi.Amount{Value: s.Amount, Currency: "JPY"}
	pi.Payer = orchestrator.Party{BankID: s.Payer.Bank, AccountHash: s.Payer.Hash}
	pi.Payee = orchestrator.Party{BankID: s.Payee.Bank, AccountHash: s.Payee.Hash}
	if s.Kind == kindByRef {
		pi.Payee.AccountHash = ""
	}
	s.Body, _ = json.Marshal(gateway.TransferRequest{PaymentInitiated: pi, IdempotencyKey: s.Key})
	return s
}

// run starts `clients` goroutines that send until stop is closed (or their
// quota is spent), each transfer retried with its same key and body until
// it gets a definitive answer or giveUp is closed.
func (l *load) run(clients int, stop, giveUp <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(l.seed, uint64(1000+c)))
			for n := 1; n <= l.perCli; n++ {
				select {
				case <-stop:
					return
				default:
				}
				s := l.next(rng, c, n)
				l.mu.Lock()
				l.all = append(l.all, s)
				l.mu.Unlock()
				l.send(s, rng, giveUp)
				pause(rng, 100, 300, giveUp)
			}
		}()
	}
	return &wg
}

// pause sleeps a random [lo, hi) ms, or until done is closed.
func pause(rng *rand.Rand, lo, hi int, done <-chan struct{}) {
	select {
	case <-done:
	case <-time.After(time.Duration(lo+rng.IntN(hi-lo)) * time.Millisecond):
	}
}

// send posts s until it has a definitive answer or giveUp is closed.
func (l *load) send(s *sent, rng *rand.Rand, giveUp <-chan struct{}) {
	for !s.definitive() {
		select {
		case <-giveUp:
			return
		default:
		}
		l.post(s)
		if !s.definitive() {
			pause(rng, 50, 250, giveUp)
		}
	}
}

// post sends s once and records what came back.
func (l *load) post(s *sent) {
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, l.base+"/api/transfers", bytes.NewReader(s.Body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", l.w.cfg.KeyFor(s.Payer.Bank))
	req.Header.Set("X-Request-Id", s.Key)
	resp, err := l.http.Do(req)
	if err != nil {
		s.mu.Lock()
		s.TransErrs++
		s.LastErr = err.Error()
		s.mu.Unlock()
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.TransErrs++
		s.LastErr = err.Error()
		return
	}
	s.Answers = append(s.Answers, answer{Status: resp.StatusCode, Body: body, Replayed: resp.Header.Get("Idempotent-Replayed") == "true"})
}

// snapshot is every transfer sent so far.
func (l *load) snapshot() []*sent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*sent(nil), l.all...)
}
