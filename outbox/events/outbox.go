package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Row is one EventOutbox row.
type Row struct {
	OutboxSeq   int64  // the entry's FinalityLog event_seq
	LogID       string // = message_id
	ChainID     string // the Kafka key
	EventSeq    int64  // per-chain I/F event_seq (spec 002 §12.5)
	EventType   string
	MessageJSON string // the Kafka value
	Headers     string // the Kafka headers (EncodeHeaders)
	CreatedAt   string
	Sent        bool // the broker acknowledged it (outbox_seq <= the publisher's cursor)
}

// Message decodes the row's message.
func (r Row) Message() (Message, error) {
	var m Message
	if err := json.Unmarshal([]byte(r.MessageJSON), &m); err != nil {
		return Message{}, fmt.Errorf("events: outbox row %d: message_json: %w", r.OutboxSeq, err)
	}
	return m, nil
}

// Install makes every append of l also insert its EventOutbox row in the
// same transaction, with p as the §12.2 producer (DefaultProducer when
// empty) and, when s is not nil, the §12.2 signature block signed by s. A
// hook l already had runs first; an error from either rolls the whole
// transaction back, entry included. Once the transaction committed,
// WakeOf(l) is notified.
func Install(l *finality.Log, p Producer, s *Signer) {
	if p == (Producer{}) {
		p = DefaultProducer
	}
	prev := l.AfterAppend
	wake := WakeOf(l)
	l.AfterAppend = func(ctx context.Context, tx *store.Tx, e finality.Entry) error {
		if prev != nil {
			if err := prev(ctx, tx, e); err != nil {
				return err
			}
		}
		if _, err := Insert(ctx, tx, e, p, s); err != nil {
			return err
		}
		tx.AfterCommit(wake.Notify)
		return nil
	}
	prevFirst := l.AfterAppendFirst
	l.AfterAppendFirst = func(ctx context.Context, es []finality.Entry) func(ctx context.Context, tx *store.Tx) error {
		var prevWrite func(ctx context.Context, tx *store.Tx) error
		if prevFirst != nil {
			prevWrite = prevFirst(ctx, es)
		}
		signed := signFirst(es, p, s)
		return func(ctx context.Context, tx *store.Tx) error {
			switch {
			case prevWrite != nil:
				if err := prevWrite(ctx, tx); err != nil {
					return err
				}
			case prevFirst == nil && prev != nil:
				for _, e := range es {
					if err := prev(ctx, tx, e); err != nil {
						return err
					}
				}
			}
			if _, err := signed.write(ctx, tx); err != nil {
				return err
			}
			tx.AfterCommit(wake.Notify)
			return nil
		}
	}
}

// firstRows is how many outbox rows one multi-row INSERT of InsertFirst
// writes (8 placeholders each).
const firstRows = 128

var outboxColumns = []string{"outbox_seq", "log_id", "chain_id", "event_seq", "event_type", "message_json", "headers", "created_at"}

// InsertFirst writes the outbox rows of es inside tx, each entry the
// first of its chain (prev_hash finality.Genesis, as
// finality.Log.AppendFirstTx appends them), so each row is its chain's
// event 1 with no causation: the rows Insert would write one by one,
// without reading any chain's tip. The messages are built, signed and
// encoded on every core at once, then written by multi-row INSERTs. A
// chain that already has an outbox row is refused by the unique index on
// (chain_id, event_seq), and the transaction must roll back.
func InsertFirst(ctx context.Context, tx *store.Tx, es []finality.Entry, p Producer, s *Signer) ([]Row, error) {
	return signFirst(es, p, s).write(ctx, tx)
}

// firstBatch is the outbox rows of first entries being built and signed
// by signFirst's goroutines.
type firstBatch struct {
	rows []Row
	errs []error
	wg   sync.WaitGroup
}

// signFirst starts building, signing and encoding the outbox rows of es
// (first entries of their chains) on every core and returns at once;
// write waits for them and inserts them.
func signFirst(es []finality.Entry, p Producer, s *Signer) *firstBatch {
	workers := max(1, min(runtime.GOMAXPROCS(0), (len(es)+63)/64))
	b := &firstBatch{rows: make([]Row, len(es)), errs: make([]error, workers)}
	for w := range workers {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for i := w; i < len(es); i += workers {
				e := es[i]
				if e.PrevHash != finality.Genesis {
					b.errs[w] = fmt.Errorf("events: %s (chain %s) is not the first entry of its chain", e.LogID, e.ChainID())
					return
				}
				m := NewMessage(e, 1, "", p)
				if s != nil {
					if err := s.Sign(&m); err != nil {
						b.errs[w] = err
						return
					}
				}
				enc, err := m.encodeString()
				if err != nil {
					b.errs[w] = fmt.Errorf("events: encode %s of chain %s: %w", e.LogID, e.ChainID(), err)
					return
				}
				b.rows[i] = Row{OutboxSeq: e.EventSeq, LogID: e.LogID, ChainID: e.ChainID(), EventSeq: 1, EventType: string(e.EventType),
					MessageJSON: enc, Headers: EncodeHeaders(m.Headers()), CreatedAt: e.OccurredAt}
			}
		}()
	}
	return b
}

// write waits for the rows and inserts them inside tx by multi-row INSERTs.
func (b *firstBatch) write(ctx context.Context, tx *store.Tx) ([]Row, error) {
	b.wg.Wait()
	if err := errors.Join(b.errs...); err != nil {
		return nil, err
	}
	rows := b.rows
	args := make([]any, 0, firstRows*len(outboxColumns))
	for lo := 0; lo < len(rows); lo += firstRows {
		part := rows[lo:min(lo+firstRows, len(rows))]
		args = args[:0]
		for _, r := range part {
			args = append(args, r.OutboxSeq, r.LogID, r.ChainID, r.EventSeq, r.EventType, r.MessageJSON, r.Headers, r.CreatedAt)
		}
		if _, err := tx.ExecContext(ctx, store.InsertRows("EventOutbox", outboxColumns, len(part)), args...); err != nil {
			return nil, fmt.Errorf("events: insert %d first outbox rows (from chain %s): %w", len(part), part[0].ChainID, err)
		}
	}
	return rows, nil
}

// Insert writes e's outbox row inside tx, allocating the chain's next
// event_seq, and returns it. Install calls it; call it directly only for
// an entry appended by a Log without the hook (never twice for one entry:
// outbox_seq is the entry's event_seq and the second insert fails).
func Insert(ctx context.Context, tx *store.Tx, e finality.Entry, p Producer, s *Signer) (Row, error) {
	chain := e.ChainID()
	var last int64
	var prevID string
	if t, ok := tx.Memo(tipMemo(chain)); ok {
		last, prevID = t.(tip).seq, t.(tip).logID
	} else if err := tx.QueryRowContext(ctx, `SELECT event_seq, log_id FROM EventOutbox WHERE chain_id = ? ORDER BY event_seq DESC LIMIT 1`, chain).Scan(&last, &prevID); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Row{}, fmt.Errorf("events: read tip of chain %s: %w", chain, err)
	}
	m := NewMessage(e, last+1, prevID, p)
	if s != nil {
		if err := s.Sign(&m); err != nil {
			return Row{}, err
		}
	}
	b, err := m.encodeString()
	if err != nil {
		return Row{}, fmt.Errorf("events: encode %s of chain %s: %w", e.LogID, chain, err)
	}
	r := Row{OutboxSeq: e.EventSeq, LogID: e.LogID, ChainID: chain, EventSeq: m.EventSeq, EventType: string(e.EventType),
		MessageJSON: b, Headers: EncodeHeaders(m.Headers()), CreatedAt: e.OccurredAt}
	if _, err := tx.ExecContext(ctx, `INSERT INTO EventOutbox (outbox_seq, log_id, chain_id, event_seq, event_type, message_json, headers, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, r.OutboxSeq, r.LogID, r.ChainID, r.EventSeq, r.EventType, r.MessageJSON, r.Headers, r.CreatedAt); err != nil {
		return Row{}, fmt.Errorf("events: insert outbox row for %s (chain %s, event_seq %d): %w", e.LogID, chain, r.EventSeq, err)
	}
	tx.SetMemo(tipMemo(chain), tip{r.EventSeq, r.LogID})
	return r, nil
}

// tip is a chain's last outbox row as this transaction inserted it.
type tip struct {
	seq   int64
	logID string
}

// tipMemo is the Tx memo key of a chain's outbox tip: the second entry a
// transaction appends to a chain takes its event_seq and causation from
// the row the transaction itself inserted, not from a read of it (the
// unique index on chain_id and event_seq still refuses a duplicate).
func tipMemo(chain string) string { return "events.tip:" + chain }

// NewMessage builds the event message of entry e as event seq of its chain;
// prevMessageID is the chain's previous event (its causation), "" for the
// first.
func NewMessage(e finality.Entry, seq int64, prevMessageID string, p Producer) Message {
	agg := Aggregate(e.TxID, e.GTID)
	payload := json.RawMessage(e.PayloadJSON)
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	return Message{
		SchemaVersion:  SchemaVersion,
		MessageType:    MessageType,
		Name:           string(e.EventType),
		MessageID:      e.LogID,
		OccurredAt:     e.OccurredAt,
		IdempotencyKey: agg + ":" + string(e.EventType) + ":" + p.OrgID + ":" + strconv.FormatInt(seq, 10),
		EventSeq:       seq,
		CorrelationID:  CorrelationID(e.ChainID()),
		CausationID:    prevMessageID,
		Producer:       p,
		ChainID:        e.ChainID(),
		Aggregate:      agg,
		Body: Body{TxID: e.TxID, GTID: e.GTID, StateFrom: e.StateFrom, StateTo: e.StateTo, Payload: payload,
			FinalitySeq: e.EventSeq, LogID: e.LogID, PrevHash: e.PrevHash, EntryHash: e.EntryHash},
	}
}

// encode is the message's JSON without HTML escaping, so body.payload keeps
// the entry's payload_json bytes (encoding/json compacts it; Append stores
// compact JSON for every payload it marshals itself).
func (m Message) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodeString is encode as a string: messageString when it can, without
// a copy of the bytes.
func (m Message) encodeString() (string, error) {
	if s, ok := messageString(&m); ok {
		return s, nil
	}
	b, err := m.encode()
	return string(b), err
}

// Aggregate is the §12.5 aggregate of a chain: TX:{txid}, GT:{gtid} or
// GLOBAL.
func Aggregate(txid, gtid string) string {
	switch {
	case txid != "":
		return "TX:" + txid
	case gtid != "":
		return "GT:" + gtid
	default:
		return finality.GlobalChain
	}
}

// CorrelationID is the correlation_id of every event of a chain: a UUID
// (version 8, name-based on SHA-256) derived from the chain id, so one
// transfer's or GTID's events share it without any stored state.
func CorrelationID(chainID string) string {
	sum := sha256.Sum256([]byte("zcgw/correlation/" + chainID))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Outbox reads and updates the EventOutbox of one coordinator database.
type Outbox struct {
	db  *store.DB
	clk clock.Clock
}

// New returns the outbox of db; clk stamps the cursor's acked_at and
// decides the publisher lease's expiry (clock.System{} when nil).
func New(db *store.DB, clk clock.Clock) *Outbox {
	if clk == nil {
		clk = clock.System{}
	}
	return &Outbox{db: db, clk: clk}
}

// ackedSeq is the stream's cursor, as a subquery.
const ackedSeq = `(SELECT acked_seq FROM EventPublisher WHERE stream = '` + Stream + `')`

const rowCols = `outbox_seq, log_id, chain_id, event_seq, event_type, message_json, headers, created_at,
	CASE WHEN outbox_seq <= ` + ackedSeq + ` THEN 1 ELSE 0 END`

func scanRows(rows *sql.Rows) ([]Row, error) {
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.OutboxSeq, &r.LogID, &r.ChainID, &r.EventSeq, &r.EventType, &r.MessageJSON, &r.Headers, &r.CreatedAt, &r.Sent); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (o *Outbox) query(ctx context.Context, q string, args ...any) ([]Row, error) {
	var out []Row
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		out, err = scanRows(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("events: read outbox: %w", err)
	}
	return out, nil
}

// Unsent returns up to limit unsent rows in FinalityLog order.
func (o *Outbox) Unsent(ctx context.Context, limit int) ([]Row, error) {
	return o.query(ctx, `SELECT `+rowCols+` FROM EventOutbox WHERE outbox_seq > `+ackedSeq+` ORDER BY outbox_seq LIMIT ?`, limit)
}

// Pending is a row with the columns a publisher sends.
type Pending struct {
	OutboxSeq int64
	ChainID   string // the Kafka key
	EventType string
	Headers   string // EncodeHeaders form
	CreatedAt string // = the FinalityLog entry's occurred_at
	// Value is message_json. It shares the memory of the string the
	// driver read (no second copy of a ~1 kB value per row): read it,
	// never write to it.
	Value []byte
}

// PendingAfter returns up to limit rows with outbox_seq > after, in
// FinalityLog order, reading only what a publisher sends (a primary-key
// range: the publisher passes its cursor).
func (o *Outbox) PendingAfter(ctx context.Context, after int64, limit int) ([]Pending, error) {
	out := make([]Pending, 0, min(limit, 4096))
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT outbox_seq, chain_id, event_type, headers, created_at, message_json FROM EventOutbox
			WHERE outbox_seq > ? ORDER BY outbox_seq LIMIT ?`, after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r Pending
			var value string
			if err := rows.Scan(&r.OutboxSeq, &r.ChainID, &r.EventType, &r.Headers, &r.CreatedAt, &value); err != nil {
				return err
			}
			r.Value = unsafe.Slice(unsafe.StringData(value), len(value))
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("events: read outbox rows after %d: %w", after, err)
	}
	return out, nil
}

// Since returns up to limit rows, sent or not, with outbox_seq >= from, in
// order.
func (o *Outbox) Since(ctx context.Context, from int64, limit int) ([]Row, error) {
	return o.query(ctx, `SELECT `+rowCols+` FROM EventOutbox WHERE outbox_seq >= ? ORDER BY outbox_seq LIMIT ?`, from, limit)
}

// Counts is the outbox's size.
type Counts struct{ Total, Unsent int64 }

// Counts returns how many rows the outbox holds and how many are unsent.
func (o *Outbox) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM EventOutbox`).Scan(&c.Total); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM EventOutbox WHERE outbox_seq > `+ackedSeq).Scan(&c.Unsent)
	})
	if err != nil {
		return Counts{}, fmt.Errorf("events: count outbox: %w", err)
	}
	return c, nil
}

// Lag is how far the publisher is behind: the unsent rows and the
// created_at of the oldest one (zero when every row is sent).
type Lag struct {
	Unsent int64
	Oldest time.Time
}

// Lag reads the unsent rows' count and the oldest one's created_at, both
// from the primary key's range after the publisher's cursor (outbox_seq
// order is creation order, so the lowest unsent outbox_seq is the oldest).
func (o *Outbox) Lag(ctx context.Context) (Lag, error) {
	var l Lag
	var oldest sql.NullString
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM EventOutbox WHERE outbox_seq > `+ackedSeq).Scan(&l.Unsent); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, `SELECT created_at FROM EventOutbox WHERE outbox_seq > `+ackedSeq+` ORDER BY outbox_seq LIMIT 1`).Scan(&oldest)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return Lag{}, fmt.Errorf("events: outbox lag: %w", err)
	}
	if oldest.Valid {
		if l.Oldest, err = clock.ParseStamp(oldest.String); err != nil {
			return Lag{}, fmt.Errorf("events: outbox lag: created_at %q: %w", oldest.String, err)
		}
	}
	return l, nil
}

// tailPage is how many rows Tail reads per query.
const tailPage = 500

// Tail calls fn for every row with outbox_seq >= from, in order. Without
// follow it returns nil at the end of the outbox; with follow it then polls
// every poll interval for new rows until ctx ends (and returns ctx.Err()).
// Rows become visible in outbox_seq order because the single writer commits
// in allocation order, so following never skips a row.
func (o *Outbox) Tail(ctx context.Context, from int64, follow bool, poll time.Duration, fn func(Row) error) error {
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	var ticker *time.Ticker
	for {
		rows, err := o.Since(ctx, from, tailPage)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
			from = r.OutboxSeq + 1
		}
		if len(rows) == tailPage {
			continue
		}
		if !follow {
			return nil
		}
		if ticker == nil {
			ticker = time.NewTicker(poll)
			defer ticker.Stop()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}
