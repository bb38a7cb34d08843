package finality

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// Genesis is the prev_hash of the first entry of every chain.
const Genesis = "GENESIS"

// GlobalChain is the chain of system-wide events (no txid, no gtid).
const GlobalChain = "GLOBAL"

// Entry is one FinalityLog row. An empty TxID, GTID or StateFrom is stored
// as NULL (and hashes as the empty string either way).
type Entry struct {
	LogID       string
	TxID        string
	GTID        string
	EventType   EventType
	StateFrom   string
	StateTo     string
	PayloadJSON string
	EventSeq    int64
	OccurredAt  string
	PrevHash    string
	EntryHash   string
}

// ChainID is COALESCE(txid, gtid, 'GLOBAL').
func (e Entry) ChainID() string { return ChainIDOf(e.TxID, e.GTID) }

// ChainIDOf is COALESCE(txid, gtid, 'GLOBAL') with "" as NULL.
func ChainIDOf(txid, gtid string) string {
	switch {
	case txid != "":
		return txid
	case gtid != "":
		return gtid
	default:
		return GlobalChain
	}
}

// ComputeHash returns entry_hash for e chained after prev: the lowercase
// hex SHA-256 of prev|log_id|txid|gtid|event_type|state_from|state_to|
// payload_json|event_seq|occurred_at, NULL fields as "", event_seq in
// plain decimal. e.PrevHash and e.EntryHash are ignored.
func ComputeHash(prev string, e Entry) string {
	s := strings.Join([]string{
		prev, e.LogID, e.TxID, e.GTID, string(e.EventType), e.StateFrom, e.StateTo,
		e.PayloadJSON, strconv.FormatInt(e.EventSeq, 10), e.OccurredAt,
	}, "|")
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Event is what a caller appends; Append fills in log_id, event_seq,
// occurred_at and the hashes.
type Event struct {
	TxID      string
	GTID      string
	Type      EventType
	StateFrom string
	StateTo   string
	// Payload is marshalled to JSON; a json.RawMessage is stored as is;
	// nil stores "{}".
	Payload any
}

// Log appends to the FinalityLog. The zero value is not usable; use New.
type Log struct {
	clock clock.Clock
	newID func() string

	// AfterAppend, when set, runs inside the same transaction right after
	// every successful append, with the entry as written. An error rolls
	// back the whole transaction (entry, CAS and side updates included).
	//
	// This is the hook for the event outbox (issue 7): the outbox writer
	// sets AfterAppend to insert one outbox row per entry, so "logged" and
	// "queued for publication" commit together. It must only write rows
	// of its own; it must not append to the FinalityLog itself.
	AfterAppend func(ctx context.Context, tx *store.Tx, e Entry) error

	// AfterAppendFirst, when set, is used instead of AfterAppend for the
	// entries of one AppendFirstTx (every one the first of its chain), all
	// at once. It is called with the entries as they will be written,
	// before their INSERTs, and returns the function that writes its own
	// rows in the same transaction after them: work that needs no
	// database (the event outbox builds and signs its messages on the
	// other cores) overlaps the entries' INSERTs. The returned function
	// must do for each entry what AfterAppend would; it is not called
	// when an INSERT fails.
	AfterAppendFirst func(ctx context.Context, es []Entry) func(ctx context.Context, tx *store.Tx) error
}

// New returns a Log reading occurred_at from clk (clock.System{} when nil).
func New(clk clock.Clock) *Log {
	if clk == nil {
		clk = clock.System{}
	}
	return &Log{clock: clk, newID: func() string { return uuid.NewV7(clk.Now()) }}
}

// Clock is the clock the log stamps occurred_at with.
func (l *Log) Clock() clock.Clock { return l.clock }

// Append writes ev as the next entry of its chain inside tx and returns
// the entry as stored. Because it runs in the caller's write transaction,
// the entry commits or rolls back together with the caller's state change.
//
// It refuses an undeclared event type (INVARIANT_VIOLATION), a missing
// state_to (MISSING_FIELD), a chain id that collides with 'GLOBAL'
// (INVALID_REQUEST) and a chain whose tip is unchained (CHAIN_TAMPERED).
func (l *Log) Append(ctx context.Context, tx *store.Tx, ev Event) (Entry, error) {
	if !ev.Type.Declared() {
		return Entry{}, domainerr.New("INVARIANT_VIOLATION", "undeclared FinalityLog event type", map[string]any{"event_type": string(ev.Type)})
	}
	if ev.StateTo == "" {
		return Entry{}, domainerr.New("MISSING_FIELD", "FinalityLog entry needs state_to", map[string]any{"field": "state_to", "event_type": string(ev.Type)})
	}
	if ev.TxID == GlobalChain || ev.GTID == GlobalChain {
		return Entry{}, domainerr.New("INVALID_REQUEST", "txid/gtid 'GLOBAL' is reserved for the system chain", nil)
	}
	payload, err := payloadJSON(ev.Payload)
	if err != nil {
		return Entry{}, domainerr.Wrap("INVALID_REQUEST", err, "FinalityLog payload is not JSON-encodable", map[string]any{"event_type": string(ev.Type)})
	}
	seq, err := store.NextFinalitySeq(ctx, tx)
	if err != nil {
		return Entry{}, err
	}
	prev, err := chainTip(ctx, tx, ev.TxID, ev.GTID)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{
		LogID:       l.newID(),
		TxID:        ev.TxID,
		GTID:        ev.GTID,
		EventType:   ev.Type,
		StateFrom:   ev.StateFrom,
		StateTo:     ev.StateTo,
		PayloadJSON: payload,
		EventSeq:    seq,
		OccurredAt:  clock.Stamp(l.clock.Now()),
		PrevHash:    prev,
	}
	e.EntryHash = ComputeHash(prev, e)
	if _, err := tx.ExecContext(ctx, `INSERT INTO FinalityLog
		(log_id, txid, gtid, event_type, state_from, state_to, payload_json, event_seq, occurred_at, prev_hash, entry_hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.LogID, nullable(e.TxID), nullable(e.GTID), string(e.EventType), nullable(e.StateFrom), e.StateTo,
		e.PayloadJSON, e.EventSeq, e.OccurredAt, e.PrevHash, e.EntryHash); err != nil {
		if store.IsUniqueViolation(err) {
			return Entry{}, domainerr.Wrap("CONCURRENCY_CONFLICT", err, "FinalityLog chain fork refused", map[string]any{"chain_id": e.ChainID(), "prev_hash": prev})
		}
		return Entry{}, fmt.Errorf("finality: insert entry of chain %s: %w", e.ChainID(), err)
	}
	tx.SetMemo(tipMemo(e.ChainID()), chainTipMemo{e.LogID, e.EntryHash})
	if l.AfterAppend != nil {
		if err := l.AfterAppend(ctx, tx, e); err != nil {
			return Entry{}, fmt.Errorf("finality: after-append hook for %s: %w", e.LogID, err)
		}
	}
	return e, nil
}

// chainTipMemo is a chain's last entry as this transaction appended it.
type chainTipMemo struct{ logID, hash string }

// tipMemo is the Tx memo key of a chain's tip: a transaction that appends
// several entries to one chain (a drive step of two transitions, a group
// commit carrying several steps of one transfer) reads the tip once; the
// later appends chain onto the entry the transaction itself wrote. The
// fork guard (the unique index on the chain and prev_hash) still refuses
// any entry whose prev_hash is not the chain's tip.
func tipMemo(chainID string) string { return "finality.tip:" + chainID }

// chainTip returns the entry_hash of the chain's last entry, or Genesis.
func chainTip(ctx context.Context, tx *store.Tx, txid, gtid string) (string, error) {
	if t, ok := tx.Memo(tipMemo(ChainIDOf(txid, gtid))); ok {
		return t.(chainTipMemo).hash, nil
	}
	var q string
	var args []any
	switch {
	case txid != "":
		q, args = "SELECT log_id, entry_hash FROM FinalityLog WHERE txid = ? ORDER BY event_seq DESC LIMIT 1", []any{txid}
	case gtid != "":
		q, args = "SELECT log_id, entry_hash FROM FinalityLog WHERE gtid = ? AND txid IS NULL ORDER BY event_seq DESC LIMIT 1", []any{gtid}
	default:
		q = "SELECT log_id, entry_hash FROM FinalityLog" + store.IndexedBy("idx_fl_global_seq") + " WHERE txid IS NULL AND gtid IS NULL ORDER BY event_seq DESC LIMIT 1"
	}
	var logID string
	var hash sql.NullString
	err := tx.QueryRowContext(ctx, q, args...).Scan(&logID, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return Genesis, nil
	}
	if err != nil {
		return "", fmt.Errorf("finality: read chain tip of %s: %w", ChainIDOf(txid, gtid), err)
	}
	if !hash.Valid || hash.String == "" {
		return "", domainerr.New("CHAIN_TAMPERED", "chain tip has no entry_hash; refusing to extend an unchained chain",
			map[string]any{"chain_id": ChainIDOf(txid, gtid), "log_id": logID, "break_reason": string(LegacyUnchainedEntry)})
	}
	return hash.String, nil
}

func payloadJSON(p any) (string, error) {
	switch v := p.(type) {
	case nil:
		return "{}", nil
	case json.RawMessage:
		if !json.Valid(v) {
			return "", errors.New("invalid raw JSON")
		}
		return string(v), nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
