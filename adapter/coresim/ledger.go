package coresim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/charset"
)

// Posting kinds the core knows.
const (
	KindDebit    = "DEBIT"
	KindCredit   = "CREDIT"
	KindReversal = "REVERSAL"
)

// Reason codes the core answers refusals with: the core's own 8-byte
// codes (coremsg Reason X(8)); corelink maps them to the spec-004 catalog.
const (
	ReasonInsufficientFunds = "NSF"     // not sufficient (available) funds
	ReasonAccountNotFound   = "NOACCT"  // no such open account
	ReasonOriginalNotFound  = "NOORIG"  // reversal/release of an unknown reference
	ReasonInvalidAmount     = "BADAMT"  // amount <= 0, or reversal above the original
	ReasonInvalidRequest    = "BADREQ"  // unknown posting kind
	ReasonClosing           = "CLOSING" // a credit to an account on closing hold (解約保留)
	ReasonBalanceNotZero    = "BALNZ"   // close of an account with a balance or active holds
	ReasonAccountExists     = "EXISTS"  // open of an account number already taken (another holder)
	ReasonAccountClosed     = "CLOSED"  // lifecycle action on a closed account
)

// Account statuses as Balance reports them. StatusClosingHold is an OPEN
// account with its closing hold set.
const (
	StatusOpen        = "OPEN"
	StatusClosingHold = "CLOSING_HOLD"
	StatusClosed      = "CLOSED"
)

// Sources of journal lines and refusals.
const (
	SourceMQ    = "MQ"
	SourceBatch = "BATCH"
	SourceOOB   = "OUT_OF_BAND"
	SourceSeed  = "OPENING"
)

// Config configures one simulated core.
type Config struct {
	Bank   string // bank code, e.g. "001"
	DBPath string // the core's own SQLite file
	Clock  clock.Clock
	Logger *slog.Logger
	// Online lists the windows (JST) in which the core serves its queue.
	// Empty means always online.
	Online []Window
	// Batch lists the windows (JST) in which overnight files may be run.
	// Empty means any time.
	Batch []Window
	// Charset of the coremsg records on the wire (default EBCDIC290, a
	// Japanese host); the adapter's link must use the same.
	Charset *charset.Charset
}

// Core is one simulated legacy core.
type Core struct {
	bank     string
	db       *store.DB
	postgres bool // db is PostgreSQL (no LastInsertId)
	clk      clock.Clock
	log      *slog.Logger

	cs *charset.Charset

	serving sync.Mutex // held by Serve while it takes and processes one request
	fatal   error      // why Serve stopped (set by the serving loop only)

	single int // requests to serve one at a time (after a backed-out batch); serving loop only

	mu        sync.Mutex
	windows   []Window
	batch     []Window
	forcedOff bool
	onlineCh  chan struct{} // closed by SetOffline(false): ends an offline wait
	stopWait  func()        // ends the serving loop's current wait for requests
	faults    Faults
}

// Open opens (creating if needed) the core's database.
func Open(ctx context.Context, cfg Config) (*Core, error) {
	if cfg.Bank == "" || cfg.DBPath == "" {
		return nil, errors.New("coresim: Config.Bank and Config.DBPath are required")
	}
	db, err := store.Open(ctx, cfg.DBPath, Schema)
	if err != nil {
		return nil, fmt.Errorf("coresim %s: %w", cfg.Bank, err)
	}
	if err := addAccountCurrency(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("coresim %s: %w", cfg.Bank, err)
	}
	if err := addClosingHold(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("coresim %s: %w", cfg.Bank, err)
	}
	c := &Core{bank: cfg.Bank, db: db, postgres: store.IsPostgres(cfg.DBPath), clk: cfg.Clock, log: cfg.Logger, windows: cfg.Online, batch: cfg.Batch,
		onlineCh: make(chan struct{})}
	if c.clk == nil {
		c.clk = clock.System{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.cs = cfg.Charset
	if c.cs == nil {
		c.cs = charset.EBCDIC290
	}
	return c, nil
}

// Close closes the core's database.
func (c *Core) Close() error { return c.db.Close() }

// Bank is the core's bank code.
func (c *Core) Bank() string { return c.bank }

// DB is the core's database, for tests and reports that read journal rows.
func (c *Core) DB() *store.DB { return c.db }

// OpenAccount opens a yen account with its holder name and opening
// balance (a production operation: the opening balance is journalled as
// such).
func (c *Core) OpenAccount(ctx context.Context, account, name string, opening int64) error {
	return c.OpenAccountIn(ctx, account, name, "JPY", opening)
}

// OpenAccountIn opens an account kept in currency (ISO 4217): a
// foreign-currency deposit (外貨普通預金) is an account of its own, and the
// core reports its currency on every balance inquiry.
func (c *Core) OpenAccountIn(ctx context.Context, account, name, currency string, opening int64) error {
	if strings.TrimSpace(account) == "" || strings.TrimSpace(name) == "" {
		return domainerr.New("MISSING_FIELD", "coresim: account and name are required", nil)
	}
	if !bankapi.ValidCurrency(currency) {
		return domainerr.New("INVALID_CURRENCY", "coresim: currency must be an ISO 4217 code", map[string]any{"account": account, "currency": currency})
	}
	if _, err := coreacct.Parse(account); err != nil {
		return domainerr.New("INVALID_REQUEST", "coresim: "+err.Error(), map[string]any{"account": account})
	}
	if opening < 0 {
		return domainerr.New("INVALID_AMOUNT", "coresim: opening balance must not be negative", map[string]any{"account": account})
	}
	now := clock.Stamp(c.clk.Now())
	return c.db.Write(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO CoreAccounts (account, name, balance, currency, opened_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)`, account, name, opening, currency, now, now); err != nil {
			return fmt.Errorf("coresim: open account %s: %w", coreacct.Mask(account), err)
		}
		if opening > 0 {
			_, err := tx.ExecContext(ctx, `INSERT INTO CoreJournal (ref, txid, account, kind, amount, delta,
				balance_after, source, posted_at) VALUES (?, '', ?, 'CREDIT', ?, ?, ?, ?, ?)`,
				"OPEN-"+account, account, opening, opening, opening, SourceSeed, now)
			return err
		}
		return nil
	})
}

// CloseAccount closes an account (cleanup-bank). Its journal stays.
func (c *Core) CloseAccount(ctx context.Context, account string) error {
	return c.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE CoreAccounts SET status = 'CLOSED', updated_at = ? WHERE account = ?`,
			clock.Stamp(c.clk.Now()), account)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domainerr.New("ACCOUNT_NOT_FOUND", "coresim: no account "+coreacct.Mask(account), map[string]any{"account": account})
		}
		return nil
	})
}

// ListOnWatchlist adds a name to the core's AML watchlist.
func (c *Core) ListOnWatchlist(ctx context.Context, name string) error {
	return c.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO CoreWatchlist (name, listed_at) VALUES (?, ?)`,
			kanaKey(name), clock.Stamp(c.clk.Now()))
		return err
	})
}

// PostIn is one posting instruction.
type PostIn struct {
	Ref, TxID, Account string
	Kind               string
	Amount             int64
	ReversalOf         string
}

// PostOut is the core's answer to a posting.
type PostOut struct {
	Applied      bool
	JournalID    int64
	BalanceAfter int64
	ReasonCode   string // when refused
}

// post applies or refuses one posting inside tx. It never checks whether
// the reference was seen before: the core is not idempotent.
func (c *Core) post(ctx context.Context, tx *store.Tx, in PostIn, source, msgID string) (PostOut, error) {
	now := clock.Stamp(c.clk.Now())
	refuse := func(reason string) (PostOut, error) {
		_, err := tx.ExecContext(ctx, `INSERT INTO CoreRefusals (ref, txid, account, kind, amount, reason_code,
			source, msg_id, refused_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.Ref, in.TxID, in.Account, in.Kind, in.Amount, reason, source, nullStr(msgID), now)
		if err != nil {
			return PostOut{}, fmt.Errorf("coresim: record refusal %s: %w", in.Ref, err)
		}
		c.log.InfoContext(ctx, "coresim.refuse", "bank", c.bank, "ref", in.Ref, "txid", in.TxID,
			"account", in.Account, "kind", in.Kind, "amount", in.Amount, "reason_code", reason)
		return PostOut{ReasonCode: reason}, nil
	}
	if in.Ref == "" || in.Amount <= 0 {
		return refuse(ReasonInvalidAmount)
	}
	var balance int64
	var status string
	var closing int
	err := tx.QueryRowContext(ctx, `SELECT balance, status, closing_hold FROM CoreAccounts WHERE account = ?`, in.Account).Scan(&balance, &status, &closing)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && status != StatusOpen) {
		return refuse(ReasonAccountNotFound)
	}
	if err != nil {
		return PostOut{}, fmt.Errorf("coresim: read account %s: %w", coreacct.Mask(in.Account), err)
	}
	if closing == 1 && in.Kind == KindCredit {
		return refuse(ReasonClosing)
	}
	var delta int64
	switch in.Kind {
	case KindCredit:
		delta = in.Amount
	case KindDebit:
		delta = -in.Amount
	case KindReversal:
		var origKind string
		var origAmount int64
		err := tx.QueryRowContext(ctx, `SELECT kind, amount FROM CoreJournal WHERE ref = ? AND account = ?
			AND kind IN ('DEBIT','CREDIT') ORDER BY journal_id LIMIT 1`, in.ReversalOf, in.Account).Scan(&origKind, &origAmount)
		if errors.Is(err, sql.ErrNoRows) {
			return refuse(ReasonOriginalNotFound)
		}
		if err != nil {
			return PostOut{}, fmt.Errorf("coresim: read original %s: %w", in.ReversalOf, err)
		}
		if in.Amount > origAmount {
			return refuse(ReasonInvalidAmount)
		}
		delta = in.Amount
		if origKind == KindCredit {
			delta = -in.Amount
		}
	default:
		return refuse(ReasonInvalidRequest)
	}
	if delta < 0 {
		// Funds held for this same transaction are consumed by its debit;
		// other holds reduce what is available.
		var heldOther int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(amount),0) FROM CoreHolds
			WHERE account = ? AND status = 'ACTIVE' AND txid <> ?`, in.Account, in.TxID).Scan(&heldOther); err != nil {
			return PostOut{}, err
		}
		if balance-heldOther+delta < 0 {
			return refuse(ReasonInsufficientFunds)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE CoreHolds SET status = 'CONSUMED', updated_at = ?
			WHERE account = ? AND status = 'ACTIVE' AND txid = ?`, now, in.Account, in.TxID); err != nil {
			return PostOut{}, err
		}
	}
	after := balance + delta
	if _, err := tx.ExecContext(ctx, `UPDATE CoreAccounts SET balance = ?, updated_at = ? WHERE account = ?`,
		after, now, in.Account); err != nil {
		return PostOut{}, fmt.Errorf("coresim: update balance %s: %w", coreacct.Mask(in.Account), err)
	}
	jid, err := store.InsertID(ctx, tx, "journal_id", `INSERT INTO CoreJournal (ref, txid, account, kind, amount, delta, balance_after,
		reversal_of, source, msg_id, posted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		in.Ref, in.TxID, in.Account, in.Kind, in.Amount, delta, after, nullStr(in.ReversalOf), source, nullStr(msgID), now)
	if err != nil {
		return PostOut{}, fmt.Errorf("coresim: journal %s: %w", in.Ref, err)
	}
	c.log.InfoContext(ctx, "coresim.post", "bank", c.bank, "ref", in.Ref, "txid", in.TxID, "account", in.Account,
		"kind", in.Kind, "amount", in.Amount, "balance_after", after, "journal_id", jid, "source", source)
	return PostOut{Applied: true, JournalID: jid, BalanceAfter: after}, nil
}

// Post applies one posting in its own transaction (used by tests and by
// the baseline that proves the core is not idempotent).
func (c *Core) Post(ctx context.Context, in PostIn) (PostOut, error) {
	var out PostOut
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		out, err = c.post(ctx, tx, in, SourceMQ, "")
		return err
	})
	return out, err
}

// LookupOut is what the core knows about a reference.
type LookupOut struct {
	State      string // APPLIED, REFUSED or UNKNOWN
	Count      int    // journal lines carrying the reference
	JournalID  int64  // the first of them
	ReasonCode string // for REFUSED: the latest refusal
}

// The inquiry states.
const (
	StateApplied = "APPLIED"
	StateRefused = "REFUSED"
	StateUnknown = "UNKNOWN"
)

func (c *Core) lookup(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, ref string) (LookupOut, error) {
	var out LookupOut
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MIN(journal_id),0) FROM CoreJournal WHERE ref = ?`, ref).
		Scan(&out.Count, &out.JournalID); err != nil {
		return out, err
	}
	if out.Count > 0 {
		out.State = StateApplied
		return out, nil
	}
	err := q.QueryRowContext(ctx, `SELECT reason_code FROM CoreRefusals WHERE ref = ? ORDER BY refusal_id DESC LIMIT 1`, ref).
		Scan(&out.ReasonCode)
	if errors.Is(err, sql.ErrNoRows) {
		out.State = StateUnknown
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.State = StateRefused
	return out, nil
}

// Lookup answers an inquiry by reference.
func (c *Core) Lookup(ctx context.Context, ref string) (LookupOut, error) {
	var out LookupOut
	err := c.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		out, err = c.lookup(ctx, tx, ref)
		return err
	})
	return out, err
}

// BalanceOut is an account's balance as the core sees it.
type BalanceOut struct {
	Found     bool
	Balance   int64
	Held      int64
	Available int64
	Name      string
	Status    string
	Currency  string // ISO 4217 the account is kept in
}

func (c *Core) balance(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, account string) (BalanceOut, error) {
	var out BalanceOut
	var closing int
	err := q.QueryRowContext(ctx, `SELECT a.balance, a.name, a.status, a.currency, a.closing_hold,
		(SELECT COALESCE(SUM(amount),0) FROM CoreHolds h WHERE h.account = a.account AND h.status = 'ACTIVE')
		FROM CoreAccounts a WHERE a.account = ?`, account).Scan(&out.Balance, &out.Name, &out.Status, &out.Currency, &closing, &out.Held)
	if err == nil && closing == 1 && out.Status == StatusOpen {
		out.Status = StatusClosingHold
	}
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Found = true
	out.Available = out.Balance - out.Held
	return out, nil
}

// Balance answers a balance inquiry.
func (c *Core) Balance(ctx context.Context, account string) (BalanceOut, error) {
	var out BalanceOut
	err := c.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		out, err = c.balance(ctx, tx, account)
		return err
	})
	return out, err
}

// JournalLine is one applied posting as journalled by the core.
type JournalLine struct {
	JournalID    int64
	Ref, TxID    string
	Account      string
	Kind         string
	Amount       int64
	Delta        int64
	BalanceAfter int64
	ReversalOf   string
	Source       string
	PostedAt     time.Time
}

// Journal returns the journal lines of an account (all accounts when
// account is empty) in posting order.
func (c *Core) Journal(ctx context.Context, account string) ([]JournalLine, error) {
	var out []JournalLine
	err := c.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT journal_id, ref, txid, account, kind, amount, delta, balance_after,
			COALESCE(reversal_of,''), source, posted_at FROM CoreJournal WHERE (? = '' OR account = ?) ORDER BY journal_id`,
			account, account)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l JournalLine
			var at string
			if err := rows.Scan(&l.JournalID, &l.Ref, &l.TxID, &l.Account, &l.Kind, &l.Amount, &l.Delta,
				&l.BalanceAfter, &l.ReversalOf, &l.Source, &at); err != nil {
				return err
			}
			l.PostedAt, _ = clock.ParseStamp(at)
			out = append(out, l)
		}
		return rows.Err()
	})
	return out, err
}

// HoldOut is the answer to a hold or release.
type HoldOut struct {
	Applied    bool
	HoldID     int64
	Available  int64
	ReasonCode string
}

func (c *Core) hold(ctx context.Context, tx *store.Tx, ref, txid, account string, amount int64) (HoldOut, error) {
	b, err := c.balance(ctx, tx, account)
	if err != nil {
		return HoldOut{}, err
	}
	if !b.Found || (b.Status != StatusOpen && b.Status != StatusClosingHold) {
		return HoldOut{ReasonCode: ReasonAccountNotFound}, nil
	}
	if amount <= 0 {
		return HoldOut{ReasonCode: ReasonInvalidAmount}, nil
	}
	if b.Available < amount {
		return HoldOut{ReasonCode: ReasonInsufficientFunds, Available: b.Available}, nil
	}
	now := clock.Stamp(c.clk.Now())
	id, err := store.InsertID(ctx, tx, "hold_id", `INSERT INTO CoreHolds (ref, txid, account, amount, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'ACTIVE', ?, ?)`, ref, txid, account, amount, now, now)
	if err != nil {
		return HoldOut{}, err
	}
	return HoldOut{Applied: true, HoldID: id, Available: b.Available - amount}, nil
}

func (c *Core) release(ctx context.Context, tx *store.Tx, ref, account string) (HoldOut, error) {
	res, err := tx.ExecContext(ctx, `UPDATE CoreHolds SET status = 'RELEASED', updated_at = ?
		WHERE ref = ? AND account = ? AND status = 'ACTIVE'`, clock.Stamp(c.clk.Now()), ref, account)
	if err != nil {
		return HoldOut{}, err
	}
	b, err := c.balance(ctx, tx, account)
	if err != nil {
		return HoldOut{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return HoldOut{ReasonCode: ReasonOriginalNotFound, Available: b.Available}, nil
	}
	return HoldOut{Applied: true, Available: b.Available}, nil
}

// Hold places a hold (in its own transaction).
func (c *Core) Hold(ctx context.Context, ref, txid, account string, amount int64) (HoldOut, error) {
	var out HoldOut
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		out, err = c.hold(ctx, tx, ref, txid, account, amount)
		return err
	})
	return out, err
}

// Release releases the active hold with reference ref.
func (c *Core) Release(ctx context.Context, ref, account string) (HoldOut, error) {
	var out HoldOut
	err := c.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		out, err = c.release(ctx, tx, ref, account)
		return err
	})
	return out, err
}

// Notification is one notification the core received.
type Notification struct {
	ID                 int64
	Ref, TxID, Account string
	Kind               string
	Amount             int64
	Text               string
}

func (c *Core) notify(ctx context.Context, tx *store.Tx, n Notification, msgID string) (int64, error) {
	return store.InsertID(ctx, tx, "notification_id", `INSERT INTO CoreNotifications (ref, txid, account, kind, amount, text, msg_id, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, n.Ref, n.TxID, n.Account, n.Kind, n.Amount, n.Text, nullStr(msgID),
		clock.Stamp(c.clk.Now()))
}

// Notifications lists what the core has received, oldest first.
func (c *Core) Notifications(ctx context.Context) ([]Notification, error) {
	var out []Notification
	err := c.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT notification_id, ref, txid, account, kind, amount, text
			FROM CoreNotifications ORDER BY notification_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n Notification
			if err := rows.Scan(&n.ID, &n.Ref, &n.TxID, &n.Account, &n.Kind, &n.Amount, &n.Text); err != nil {
				return err
			}
			out = append(out, n)
		}
		return rows.Err()
	})
	return out, err
}

func (c *Core) screened(ctx context.Context, tx *store.Tx, name string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM CoreWatchlist WHERE name = ?`, kanaKey(name)).Scan(&n)
	return n > 0, err
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// addAccountCurrency adds CoreAccounts.currency to a database made before
// the core kept foreign-currency accounts: every existing account was a
// yen account.
func addAccountCurrency(ctx context.Context, db *store.DB) error {
	return store.AddColumn(ctx, db, "CoreAccounts", "currency", "TEXT NOT NULL DEFAULT 'JPY'")
}
