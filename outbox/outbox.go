package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Status is the state of an outbox row.
type Status string

// The outbox states.
const (
	Pending    Status = "PENDING"
	Claimed    Status = "CLAIMED"
	Applied    Status = "APPLIED"
	Blocked    Status = "BLOCKED"
	InDoubt    Status = "IN_DOUBT"
	WrittenOff Status = "WRITTEN_OFF"
	// InFile: a RouteFILE posting written into an overnight posting file,
	// waiting for the core's result file (SettleFromFile).
	InFile Status = "IN_FILE"
)

// MaxAmount is the safety ceiling on a posting amount (spec 004
// MAX_AMOUNT_VALUE, one trillion minor units).
const MaxAmount int64 = 1_000_000_000_000

// EntityType is the EntityStateLog entity_type of outbox rows.
const EntityType = "OUTBOX"

// Config wires an Outbox.
type Config struct {
	DB     *store.DB // the adapter's database, opened with Schema included
	Core   Core
	Cases  CaseOpener  // nil: Cases are left for a later sweep with a CaseOpener
	Clock  clock.Clock // nil: clock.System{}
	Logger *slog.Logger
	// Postings is told each posting's final status (nil: nobody is).
	Postings PostingReporter
	// Actor is written to EntityStateLog for automatic transitions, e.g.
	// "BANK_001". Default "SYSTEM".
	Actor string
	// CaseRetryAfter is how long an unfinished Case opening (claimed but
	// not recorded) is left alone before a sweep opens it again. Default 1m.
	CaseRetryAfter time.Duration
	// Owner is the process whose claims Drain and ResolveInDoubt make
	// (claim_owner = Owner.Owner("drain")). Zero: an ephemeral identity,
	// whose claims no node takes back at start; they wait for their lease.
	// Run takes its own identity from RunConfig.
	Owner procid.Identity
	// Leases and deadlines (docs/outbox.md "Leases and deadlines"). Zero
	// values take the defaults; set values must keep
	// PostingTimeout + RecordTimeout < Lease, and a Core with a reply
	// timeout (Timeout() time.Duration) must answer within PostingTimeout.
	Lease          time.Duration // a claim's lease (default PostingTimeout+RecordTimeout+1s = 9s)
	PostingTimeout time.Duration // bound on one posting's work under a claim (default 6s, or the core's reply timeout + 1s if longer)
	RecordTimeout  time.Duration // bound on recording an outcome, in a context detached from the caller's (default 2s)
}

// Default leases and deadlines (docs/outbox.md "Leases and deadlines").
const (
	DefaultPostingTimeout = 6 * time.Second
	DefaultRecordTimeout  = 2 * time.Second
	leaseMargin           = time.Second
)

// replyTimeouter is a Core that bounds its own wait for an answer
// (corelink.Link).
type replyTimeouter interface{ Timeout() time.Duration }

// timing fills in the defaults of cfg's leases and deadlines and checks the
// rule: everything a claimer does under a claim (the posting's work, then
// recording its outcome) ends before the claim's lease, and the core's
// reply timeout fits in the posting's deadline.
func (cfg *Config) timing() error {
	var reply time.Duration
	if rt, ok := cfg.Core.(replyTimeouter); ok {
		reply = rt.Timeout()
	}
	if cfg.RecordTimeout <= 0 {
		cfg.RecordTimeout = DefaultRecordTimeout
	}
	if cfg.PostingTimeout <= 0 {
		cfg.PostingTimeout = max(DefaultPostingTimeout, reply+time.Second)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = cfg.PostingTimeout + cfg.RecordTimeout + leaseMargin
	}
	return CheckTiming(cfg.Lease, cfg.PostingTimeout, cfg.RecordTimeout, reply)
}

// CheckTiming is the lease rule of docs/outbox.md: a claim's lease is
// longer than everything its holder may do under it (the posting's work,
// bounded by postingTimeout, then recording the outcome, bounded by
// recordTimeout), so a live claimer is never taken for dead; and the
// core's reply timeout (0: unknown) is shorter than the posting's
// deadline, so an answer that comes in time is never cut off.
func CheckTiming(lease, postingTimeout, recordTimeout, replyTimeout time.Duration) error {
	if postingTimeout <= 0 || recordTimeout <= 0 || lease <= 0 {
		return fmt.Errorf("outbox: lease %s, posting timeout %s and record timeout %s must be positive", lease, postingTimeout, recordTimeout)
	}
	if postingTimeout+recordTimeout >= lease {
		return fmt.Errorf("outbox: claim lease %s must be longer than posting timeout %s + record timeout %s: a live claimer would be taken for dead",
			lease, postingTimeout, recordTimeout)
	}
	if replyTimeout > 0 && replyTimeout >= postingTimeout {
		return fmt.Errorf("outbox: the core's reply timeout %s must be shorter than the posting timeout %s", replyTimeout, postingTimeout)
	}
	return nil
}

// Outbox drains postings to one core. It is safe for concurrent use, and
// several processes may drain the same database.
type Outbox struct {
	db       *store.DB
	core     Core
	cases    CaseOpener
	postings PostingReporter
	clk      clock.Clock
	log      *slog.Logger
	actor    string
	caseWait time.Duration
	owner    string // claim_owner of Drain and ResolveInDoubt claims
	lease    time.Duration
	postTO   time.Duration
	recTO    time.Duration

	mu      sync.Mutex
	cursor  string // the account (bank NUL account) the last pass served last
	probing bool   // the last pass stopped (core offline or silent): send single postings until one gets through

	wakeMu    sync.Mutex
	wakeSeq   uint64        // Wake calls so far
	wakeCh    chan struct{} // closed by the next Wake
	reporting sync.Mutex    // held by the Run loop that is reporting
}

// Wake tells Run that a posting was queued (call it after the commit of
// the transaction that enqueued it): Run's sleeping loops start a pass at
// once, and a loop whose pass was running makes one more. It never blocks.
func (o *Outbox) Wake() {
	o.wakeMu.Lock()
	o.wakeSeq++
	close(o.wakeCh)
	o.wakeCh = make(chan struct{})
	o.wakeMu.Unlock()
}

// New returns an Outbox.
func New(cfg Config) (*Outbox, error) {
	if cfg.DB == nil {
		return nil, errors.New("outbox: Config.DB is required")
	}
	if err := cfg.timing(); err != nil {
		return nil, err
	}
	o := &Outbox{db: cfg.DB, core: cfg.Core, cases: cfg.Cases, postings: cfg.Postings, clk: cfg.Clock, log: cfg.Logger,
		actor: cfg.Actor, caseWait: cfg.CaseRetryAfter, lease: cfg.Lease, postTO: cfg.PostingTimeout, recTO: cfg.RecordTimeout,
		wakeCh: make(chan struct{})}
	if o.clk == nil {
		o.clk = clock.System{}
	}
	id := cfg.Owner
	if id.Node == "" {
		id = procid.Ephemeral("outbox", o.clk)
	}
	o.owner = id.Owner("drain")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := migrate(ctx, cfg.DB); err != nil {
		return nil, err
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.actor == "" {
		o.actor = "SYSTEM"
	}
	if o.caseWait <= 0 {
		o.caseWait = time.Minute
	}
	return o, nil
}

// Validate checks a posting before it is queued.
func (p Posting) Validate() error {
	missing := func(f string) error {
		return domainerr.New("MISSING_FIELD", "outbox: posting field "+f+" is empty", map[string]any{"field": f, "ref": p.Ref})
	}
	switch {
	case strings.TrimSpace(p.Ref) == "":
		return missing("Ref")
	case strings.TrimSpace(p.TxID) == "":
		return missing("TxID")
	case strings.TrimSpace(p.Bank) == "":
		return missing("Bank")
	case strings.TrimSpace(p.Account) == "":
		return missing("Account")
	}
	if !p.Kind.Valid() {
		return domainerr.New("INVALID_REQUEST", fmt.Sprintf("outbox: posting kind %q is not DEBIT, CREDIT or REVERSAL", p.Kind),
			map[string]any{"field": "Kind", "ref": p.Ref})
	}
	if p.Amount <= 0 || p.Amount > MaxAmount {
		return domainerr.New("INVALID_AMOUNT", fmt.Sprintf("outbox: amount %d outside 1..%d", p.Amount, MaxAmount),
			map[string]any{"field": "Amount", "ref": p.Ref})
	}
	if p.Kind == Reversal && p.ReversalOf == "" {
		return missing("ReversalOf")
	}
	if p.Kind != Reversal && p.ReversalOf != "" {
		return domainerr.New("INVALID_REQUEST", "outbox: ReversalOf is only for REVERSAL postings",
			map[string]any{"field": "ReversalOf", "ref": p.Ref})
	}
	if p.ReversalOf == p.Ref {
		return domainerr.New("INVALID_REQUEST", "outbox: a posting cannot reverse itself",
			map[string]any{"field": "ReversalOf", "ref": p.Ref})
	}
	switch p.Route {
	case "", RouteMQ:
	case RouteFILE:
		if err := FitsFile(p); err != nil {
			return domainerr.Wrap("INVALID_REQUEST", err, "outbox: posting does not fit the overnight file",
				map[string]any{"field": "Route", "ref": p.Ref})
		}
	default:
		return domainerr.New("INVALID_REQUEST", fmt.Sprintf("outbox: route %q is not MQ or FILE", p.Route),
			map[string]any{"field": "Route", "ref": p.Ref})
	}
	return nil
}

func (p Posting) route() Route {
	if p.Route == "" {
		return RouteMQ
	}
	return p.Route
}

// Enqueue queues p as PENDING inside the caller's transaction, so the
// posting exists exactly when the adapter's own change (shadow ledger,
// idempotency record) commits. A second posting with the same Ref is
// refused with IDEMPOTENCY_KEY_CONFLICT.
func (o *Outbox) Enqueue(ctx context.Context, tx *store.Tx, p Posting) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	now := clock.Stamp(o.clk.Now())
	var dup int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterOutbox WHERE ref = ?`, p.Ref).Scan(&dup); err != nil {
		return 0, fmt.Errorf("outbox: enqueue %s: %w", p.Ref, err)
	}
	if dup > 0 {
		return 0, domainerr.New("IDEMPOTENCY_KEY_CONFLICT", "outbox: posting reference already queued",
			map[string]any{"ref": p.Ref})
	}
	var rev any
	if p.ReversalOf != "" {
		rev = p.ReversalOf
	}
	id, err := store.InsertID(ctx, tx, "id", `INSERT INTO AdapterOutbox
		(ref, txid, bank, account, kind, amount, reversal_of, route, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', ?, ?)`,
		p.Ref, p.TxID, p.Bank, p.Account, string(p.Kind), p.Amount, rev, string(p.route()), now, now)
	if err != nil {
		return 0, fmt.Errorf("outbox: enqueue %s: %w", p.Ref, err)
	}
	if err := o.stateLog(ctx, tx, id, "OutboxEnqueued", "", Pending, "", o.actor,
		map[string]any{"ref": p.Ref, "txid": p.TxID, "route": string(p.route())}); err != nil {
		return 0, err
	}
	o.log.InfoContext(ctx, "outbox.enqueue", "id", id, "ref", p.Ref, "txid", p.TxID, "bank", p.Bank,
		"account", p.Account, "kind", string(p.Kind), "amount", p.Amount, "route", string(p.route()))
	return id, nil
}

// Entry is one outbox row as stored.
type Entry struct {
	ID         int64
	Posting    Posting
	Status     Status
	Sends      int // how many times the posting was handed to the core
	Lookups    int // how many inquiries by reference were made
	ReasonCode string
	LastError  string
	CoreRef    string
	CaseID     string
	FileID     string // the overnight file a FILE posting went into
	FileSeq    int64  // its detail number in that file
	CreatedAt  time.Time
	UpdatedAt  time.Time
	AppliedAt  time.Time
}

const entryCols = `id, ref, txid, bank, account, kind, amount, COALESCE(reversal_of,''), status, sends, lookups,
	COALESCE(reason_code,''), COALESCE(last_error,''), COALESCE(core_ref,''), COALESCE(case_id,''),
	created_at, updated_at, COALESCE(applied_at,''), route, COALESCE(file_id,''), COALESCE(file_seq,0)`

type scanner interface{ Scan(dest ...any) error }

func scanEntry(s scanner) (Entry, error) {
	var e Entry
	var kind, status, created, updated, applied, route string
	err := s.Scan(&e.ID, &e.Posting.Ref, &e.Posting.TxID, &e.Posting.Bank, &e.Posting.Account, &kind,
		&e.Posting.Amount, &e.Posting.ReversalOf, &status, &e.Sends, &e.Lookups, &e.ReasonCode, &e.LastError,
		&e.CoreRef, &e.CaseID, &created, &updated, &applied, &route, &e.FileID, &e.FileSeq)
	if err != nil {
		return e, err
	}
	e.Posting.Kind, e.Status, e.Posting.Route = Kind(kind), Status(status), Route(route)
	e.CreatedAt, _ = clock.ParseStamp(created)
	e.UpdatedAt, _ = clock.ParseStamp(updated)
	if applied != "" {
		e.AppliedAt, _ = clock.ParseStamp(applied)
	}
	return e, nil
}

// Get returns one row; a missing id is a NOT_FOUND-category error.
func (o *Outbox) Get(ctx context.Context, id int64) (Entry, error) {
	var e Entry
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		e, err = scanEntry(tx.QueryRowContext(ctx, `SELECT `+entryCols+` FROM AdapterOutbox WHERE id = ?`, id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return e, domainerr.New("TX_NOT_FOUND", fmt.Sprintf("outbox: no posting with id %d", id), map[string]any{"id": id})
	}
	if err != nil {
		return e, fmt.Errorf("outbox: get %d: %w", id, err)
	}
	return e, nil
}

// Filter selects rows for List. Empty fields match everything.
type Filter struct {
	Status  Status
	Bank    string
	Account string
	TxID    string
	Route   Route
	FileID  string
	CaseID  string // rows carrying this Case
	AfterID int64  // only rows with a larger id: keyset paging through a long list
	Limit   int    // default 1000
}

// where is the WHERE clause (and its arguments) of the rows f selects,
// ignoring its Limit: one filter for List and Count.
func (f Filter) where() (string, []any) {
	q := ` WHERE 1=1`
	var args []any
	add := func(col, v string) {
		if v != "" {
			q += " AND " + col + " = ?"
			args = append(args, v)
		}
	}
	add("status", string(f.Status))
	add("bank", f.Bank)
	add("account", f.Account)
	add("txid", f.TxID)
	add("route", string(f.Route))
	add("file_id", f.FileID)
	add("case_id", f.CaseID)
	if f.AfterID > 0 {
		q += " AND id > ?"
		args = append(args, f.AfterID)
	}
	return q, args
}

// Count counts the rows f selects, ignoring its Limit: with AfterID set to
// the last id a page showed, how many rows that page did not show.
func (o *Outbox) Count(ctx context.Context, f Filter) (int64, error) {
	w, args := f.where()
	var n int64
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterOutbox`+w, args...).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: count: %w", err)
	}
	return n, nil
}

// List returns rows in id order.
func (o *Outbox) List(ctx context.Context, f Filter) ([]Entry, error) {
	w, args := f.where()
	q := `SELECT ` + entryCols + ` FROM AdapterOutbox` + w
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	q += " ORDER BY id LIMIT ?"
	args = append(args, f.Limit)
	var out []Entry
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanEntry(rows)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: list: %w", err)
	}
	return out, nil
}

// Counts returns how many rows are in each state.
func (o *Outbox) Counts(ctx context.Context) (map[Status]int, error) {
	out := map[Status]int{}
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT status, COUNT(*) FROM AdapterOutbox GROUP BY status`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			var n int
			if err := rows.Scan(&s, &n); err != nil {
				return err
			}
			out[Status(s)] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: counts: %w", err)
	}
	return out, nil
}

// PostingStatus is the status of the txid's latest posting of kind ("" when
// the outbox holds none), read on the txid index: where that leg stands at
// the core (APPLIED: landed; BLOCKED: refused).
func (o *Outbox) PostingStatus(ctx context.Context, txid string, kind Kind) (Status, error) {
	var s string
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT status FROM AdapterOutbox WHERE txid = ? AND kind = ? ORDER BY id DESC LIMIT 1`,
			txid, string(kind)).Scan(&s)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("outbox: posting status of %s %s: %w", txid, kind, err)
	}
	return Status(s), nil
}

// OpenStatuses are the statuses the metrics report per bank: postings
// waiting (PENDING), in flight (CLAIMED), unanswered (IN_DOUBT) and
// refused by the core (BLOCKED).
var OpenStatuses = []Status{Pending, Claimed, InDoubt, Blocked}

// OpenCounts returns how many postings are in each of OpenStatuses, 0 for
// an empty status. Each count is a range of the (status, id) index, so it
// does not grow with the APPLIED history.
func (o *Outbox) OpenCounts(ctx context.Context) (map[Status]int64, error) {
	out := make(map[Status]int64, len(OpenStatuses))
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		for _, s := range OpenStatuses {
			var n int64
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterOutbox WHERE status = ?`, string(s)).Scan(&n); err != nil {
				return err
			}
			out[s] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: open counts: %w", err)
	}
	return out, nil
}

func init() {
	// The outbox's rows are an entity of EntityStateLog (spec 003): its
	// status changes are guarded UPDATEs made here, logged with
	// entitystate.Record in the same transaction.
	if err := entitystate.Register(entitystate.Entity{Type: EntityType, Table: "AdapterOutbox",
		IDColumn: "id", StateColumn: "status"}); err != nil {
		panic(err)
	}
}

// stateLog appends one EntityStateLog row in tx, recording a change this
// package has just made with its own guarded UPDATE.
func (o *Outbox) stateLog(ctx context.Context, tx *store.Tx, id int64, event string, from, to Status, reason, actor string, payload map[string]any) error {
	return o.stateLogTo(ctx, tx, nil, id, event, from, to, reason, actor, payload)
}

// stateLogTo is stateLog, or, with facts, appends the row to *facts for
// the caller to write with the rest of its batch (entitystate.RecordAll:
// one multi-row INSERT).
func (o *Outbox) stateLogTo(ctx context.Context, tx *store.Tx, facts *[]entitystate.Fact, id int64, event string, from, to Status, reason, actor string, payload map[string]any) error {
	f := entitystate.Fact{EntityType: EntityType, EntityID: strconv.FormatInt(id, 10), EventType: event, To: string(to),
		ReasonCode: reason, Actor: actor}
	if payload != nil {
		f.Payload = payload
	}
	if from != "" {
		s := string(from)
		f.From = &s
	}
	if facts != nil {
		*facts = append(*facts, f)
		return nil
	}
	if err := entitystate.Record(ctx, tx, o.clk, f); err != nil {
		return fmt.Errorf("outbox: state log %d %s->%s: %w", id, from, to, err)
	}
	return nil
}

// recordFacts writes the state-log rows a batch collected (stateLogTo).
func (o *Outbox) recordFacts(ctx context.Context, tx *store.Tx, facts []entitystate.Fact) error {
	if len(facts) == 0 {
		return nil
	}
	if err := entitystate.RecordAll(ctx, tx, o.clk, facts); err != nil {
		return fmt.Errorf("outbox: state log of %d postings: %w", len(facts), err)
	}
	return nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
