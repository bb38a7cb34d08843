package dns

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Cycle states (DnsCycles.state) and IGS modes (DnsCycles.igs_mode).
const (
	StateOpen       = "OPEN"
	StateKicked     = "KICKED"
	StateSettled    = "SETTLED"
	StateHoldActive = "HOLD_ACTIVE"
	// StateCancelled is a zcgw addition to spec 003's DnsState: a held
	// cycle an operator cancelled (handoff #2's cancel path, 000 §5.2).
	StateCancelled = "CANCELLED"

	IgsNormal     = "NORMAL"
	IgsRingfenced = "RINGFENCED"
)

// VenueBOJ is the SettlementPositions venue of the simulated central-bank
// current accounts that DNS cycles settle on.
const VenueBOJ = "BOJ"

// HoldReasonInsufficientFunds is hold_reason.reason when a net debtor's
// central-bank balance does not cover its net debit (spec 004 state reason
// code BOJ_INSUFFICIENT_FUNDS).
const HoldReasonInsufficientFunds = "BOJ_INSUFFICIENT_FUNDS"

// Service runs DNS cycles against the coordinator database.
type Service struct {
	db     *store.DB
	log    *finality.Log
	gate   lane.WritableGate
	clk    clock.Clock
	logger *slog.Logger
	lanes  *lane.Lanes // the settlement GTID (gtid.go)

	mu     sync.Mutex
	chains map[string]string // currency -> settlement chain (venue.go), under mu
}

// New returns the DNS service. flog is the FinalityLog every cycle fact is
// appended to (pass the one carrying the outbox hook); gate must not be nil
// (sysmode.Gate{}); clk nil means the system clock; logger nil discards.
func New(db *store.DB, flog *finality.Log, gate lane.WritableGate, clk clock.Clock, logger *slog.Logger) *Service {
	if gate == nil {
		panic("dns.New: nil WritableGate")
	}
	if clk == nil {
		clk = clock.System{}
	}
	if flog == nil {
		flog = finality.New(clk)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{db: db, log: flog, gate: gate, clk: clk, logger: logger, lanes: lane.New(db, flog, gate, clk, logger)}
}

// DB is the coordinator database the service writes to.
func (s *Service) DB() *store.DB { return s.db }

// Cycle is one DnsCycles row.
type Cycle struct {
	CycleID         string           `json:"cycle_id"`
	BusinessDate    string           `json:"business_date"`
	Currency        string           `json:"currency"`
	IntradaySeq     int              `json:"intraday_seq"`
	State           string           `json:"state"`
	IgsMode         string           `json:"igs_mode"`
	KickedAt        string           `json:"kicked_at,omitempty"`
	SettledAt       string           `json:"settled_at,omitempty"`
	HoldReason      string           `json:"hold_reason,omitempty"` // JSON {reason, shortfalls}
	NetPositions    map[string]int64 `json:"net_positions,omitempty"`
	HoldCausing     []string         `json:"hold_causing_participants,omitempty"`
	PublicMessageID string           `json:"public_message_id,omitempty"`
	// SettlementChain is the chain of the tokenised central-bank accounts
	// a non-JPY cycle settles on ("" for yen: the classic BOJ accounts).
	SettlementChain string `json:"settlement_chain,omitempty"`
	CreatedAt       string `json:"created_at"`
	UpdatedAt       string `json:"updated_at,omitempty"`
}

var cycleIDRe = regexp.MustCompile(`^DNS-([A-Z]{3})-(\d{8})-(\d{2})$`)

// CycleID is the canonical cycle id DNS-{CCY}-YYYYMMDD-NN for a JST business
// date 'YYYY-MM-DD' and the 1-based intraday sequence (1..99).
func CycleID(currency, businessDate string, seq int) (string, error) {
	if err := checkCurrency(currency); err != nil {
		return "", err
	}
	if _, err := clock.ParseBusinessDate(businessDate); err != nil {
		return "", domainerr.New("INVALID_REQUEST", "business_date must be YYYY-MM-DD", map[string]any{"business_date": businessDate})
	}
	if seq < 1 || seq > 99 {
		return "", domainerr.New("INVALID_REQUEST", "intraday sequence must be 1..99", map[string]any{"intraday_seq": seq})
	}
	return fmt.Sprintf("DNS-%s-%s-%02d", currency, strings.ReplaceAll(businessDate, "-", ""), seq), nil
}

// ParseCycleID splits a canonical cycle id into currency, business date
// ('YYYY-MM-DD') and intraday sequence.
func ParseCycleID(id string) (currency, businessDate string, seq int, err error) {
	m := cycleIDRe.FindStringSubmatch(id)
	if m == nil {
		return "", "", 0, domainerr.New("INVALID_REQUEST", "cycle_id must look like DNS-JPY-20261202-01", map[string]any{"cycle_id": id})
	}
	d := m[2][:4] + "-" + m[2][4:6] + "-" + m[2][6:]
	if _, err := clock.ParseBusinessDate(d); err != nil {
		return "", "", 0, domainerr.New("INVALID_REQUEST", "cycle_id has an impossible date", map[string]any{"cycle_id": id})
	}
	n, _ := strconv.Atoi(m[3])
	if n < 1 {
		return "", "", 0, domainerr.New("INVALID_REQUEST", "cycle_id sequence starts at 01", map[string]any{"cycle_id": id})
	}
	return m[1], d, n, nil
}

// PublicMessageID is the public announcement template id of a HOLD
// (DnsCycles.public_message_id): DNS_HOLD_{business_date}.
func PublicMessageID(businessDate string) string { return "DNS_HOLD_" + businessDate }

func checkCurrency(c string) error {
	if len(c) != 3 || strings.ToUpper(c) != c || strings.ContainsFunc(c, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		return domainerr.New("INVALID_CURRENCY", "currency must be an ISO 4217 code like JPY", map[string]any{"currency": c})
	}
	return nil
}

const cycleCols = `cycle_id, business_date, currency, intraday_seq, state, igs_mode, COALESCE(kicked_at,''),
	COALESCE(settled_at,''), COALESCE(hold_reason,''), COALESCE(net_positions,''), COALESCE(hold_causing_participants,''),
	COALESCE(public_message_id,''), created_at, COALESCE(updated_at,''), COALESCE(settlement_chain,'')`

func scanCycle(sc interface{ Scan(...any) error }) (Cycle, error) {
	var c Cycle
	var nets, causing string
	if err := sc.Scan(&c.CycleID, &c.BusinessDate, &c.Currency, &c.IntradaySeq, &c.State, &c.IgsMode, &c.KickedAt,
		&c.SettledAt, &c.HoldReason, &nets, &causing, &c.PublicMessageID, &c.CreatedAt, &c.UpdatedAt, &c.SettlementChain); err != nil {
		return Cycle{}, err
	}
	if nets != "" {
		if err := jsonUnmarshal(nets, &c.NetPositions); err != nil {
			return Cycle{}, fmt.Errorf("dns: cycle %s net_positions: %w", c.CycleID, err)
		}
	}
	if causing != "" {
		if err := jsonUnmarshal(causing, &c.HoldCausing); err != nil {
			return Cycle{}, fmt.Errorf("dns: cycle %s hold_causing_participants: %w", c.CycleID, err)
		}
	}
	return c, nil
}

// GetInTx reads a cycle; an unknown id is NOT_FOUND.
func GetInTx(ctx context.Context, tx *store.Tx, cycleID string) (Cycle, error) {
	c, err := scanCycle(tx.QueryRowContext(ctx, `SELECT `+cycleCols+` FROM DnsCycles WHERE cycle_id = ?`, cycleID))
	if errors.Is(err, sql.ErrNoRows) {
		return Cycle{}, domainerr.New("NOT_FOUND", "no such DNS cycle", map[string]any{"cycle_id": cycleID})
	}
	if err != nil {
		return Cycle{}, fmt.Errorf("dns: read cycle %s: %w", cycleID, err)
	}
	return c, nil
}

// Get reads a cycle on a read snapshot.
func (s *Service) Get(ctx context.Context, cycleID string) (c Cycle, err error) {
	err = s.db.Read(ctx, func(tx *store.Tx) error {
		c, err = GetInTx(ctx, tx, cycleID)
		return err
	})
	return c, err
}

// CyclesOf lists the cycles of a business date and currency in intraday
// order.
func (s *Service) CyclesOf(ctx context.Context, businessDate, currency string) (out []Cycle, err error) {
	err = s.db.Read(ctx, func(tx *store.Tx) error {
		out, err = cyclesOf(ctx, tx, businessDate, currency)
		return err
	})
	return out, err
}

func cyclesOf(ctx context.Context, tx *store.Tx, businessDate, currency string) ([]Cycle, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+cycleCols+` FROM DnsCycles WHERE business_date = ? AND currency = ?
		ORDER BY intraday_seq`, businessDate, currency)
	if err != nil {
		return nil, fmt.Errorf("dns: list cycles: %w", err)
	}
	defer rows.Close()
	var out []Cycle
	for rows.Next() {
		c, err := scanCycle(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// OpenCycleInTx returns the OPEN cycle of (businessDate, currency),
// creating the next one (intraday_seq = last + 1, or 01) when there is
// none. created reports whether this call created it.
func (s *Service) OpenCycleInTx(ctx context.Context, tx *store.Tx, businessDate, currency string) (c Cycle, created bool, err error) {
	if err := s.gate.CheckWritable(ctx, tx); err != nil {
		return Cycle{}, false, err
	}
	all, err := cyclesOf(ctx, tx, businessDate, currency)
	if err != nil {
		return Cycle{}, false, err
	}
	for _, c := range all {
		if c.State == StateOpen {
			return c, false, nil
		}
	}
	seq := 1
	if n := len(all); n > 0 {
		seq = all[n-1].IntradaySeq + 1
	}
	c, err = s.createCycle(ctx, tx, businessDate, currency, seq)
	return c, err == nil, err
}

func (s *Service) createCycle(ctx context.Context, tx *store.Tx, businessDate, currency string, seq int) (Cycle, error) {
	id, err := CycleID(currency, businessDate, seq)
	if err != nil {
		return Cycle{}, err
	}
	now := clock.Stamp(s.clk.Now())
	var chain any // NULL: the classic BOJ-NET
	if c := s.SettlementChainOf(currency); c != "" {
		chain = c
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO DnsCycles (cycle_id, business_date, state, igs_mode, currency,
		intraday_seq, settlement_chain, created_at, updated_at) VALUES (?, ?, 'OPEN', 'NORMAL', ?, ?, ?, ?, ?)`,
		id, businessDate, currency, seq, chain, now, now); err != nil {
		return Cycle{}, fmt.Errorf("dns: create cycle %s: %w", id, err)
	}
	s.logger.InfoContext(ctx, "dns.cycle_opened", "cycle_id", id, "business_date", businessDate, "currency", currency)
	return GetInTx(ctx, tx, id)
}

// OpenCycle is OpenCycleInTx in its own write transaction.
func (s *Service) OpenCycle(ctx context.Context, businessDate, currency string) (c Cycle, err error) {
	err = s.db.Write(ctx, func(tx *store.Tx) error {
		c, _, err = s.OpenCycleInTx(ctx, tx, businessDate, currency)
		return err
	})
	return c, err
}

// appendCycleEvent appends a fact to the cycle's own chain (gtid = cycle
// id, txid NULL: the spec's 'DNS-' chain, watermark key DNS:<cycle_id>).
func (s *Service) appendCycleEvent(ctx context.Context, tx *store.Tx, cycleID string, typ finality.EventType, from, to string, payload any) (finality.Entry, error) {
	e, err := s.log.Append(ctx, tx, finality.Event{GTID: cycleID, Type: typ, StateFrom: from, StateTo: to, Payload: payload})
	if err != nil {
		return finality.Entry{}, fmt.Errorf("dns: append %s for %s: %w", typ, cycleID, err)
	}
	return e, nil
}
