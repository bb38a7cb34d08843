package events

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

var errRollBack = errors.New("roll back")

// InsertFirst writes, for first entries of new chains, exactly the rows
// (signature included) Insert writes one by one, and they verify.
func TestInsertFirstWritesTheRowsInsertWould(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Signer{KeyID: "KEY-ZC-1", PrivateKey: priv}
	l := finality.New(clock.NewManual(t0)) // no hook: the entries alone
	evs := make([]finality.Event, 300)     // more than one INSERT of firstRows, several signers
	for i := range evs {
		evs[i] = finality.Event{TxID: fmt.Sprintf("TX-%04d", i), Type: finality.PaymentInitiated, StateTo: "RECEIVED",
			Payload: map[string]any{"amount": 100 + i}}
	}
	var entries []finality.Entry
	if err := db.Write(ctx, func(tx *store.Tx) error {
		entries, err = l.AppendFirstTx(ctx, tx, evs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var one []Row
	if err := db.Write(ctx, func(tx *store.Tx) error {
		for _, e := range entries {
			r, err := Insert(ctx, tx, e, DefaultProducer, s)
			if err != nil {
				return err
			}
			one = append(one, r)
		}
		return errRollBack
	}); !errors.Is(err, errRollBack) {
		t.Fatal(err)
	}
	var first []Row
	if err := db.Write(ctx, func(tx *store.Tx) error {
		first, err = InsertFirst(ctx, tx, entries, DefaultProducer, s)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, one) {
		t.Fatalf("InsertFirst rows differ from Insert's: first %+v, one by one %+v", first[0], one[0])
	}
	stored, err := New(db, nil).Since(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(entries) {
		t.Fatalf("%d rows stored for %d entries", len(stored), len(entries))
	}
	keys := func(string, time.Time) (ed25519.PublicKey, error) { return pub, nil }
	for i, r := range stored {
		if r.MessageJSON != one[i].MessageJSON || r.Headers != one[i].Headers || r.OutboxSeq != entries[i].EventSeq {
			t.Fatalf("row %d: stored %+v, want %+v", i, r, one[i])
		}
		m, err := r.Message()
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifySignature(m, keys); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
}

// Through Install, AppendFirstTx writes one outbox row per entry in the
// same transaction, runs an earlier per-entry hook for each, and a chain
// that already has its first event is refused with nothing written.
func TestAppendFirstThroughInstall(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	l := finality.New(clock.NewManual(t0))
	var seen []string
	l.AfterAppend = func(_ context.Context, _ *store.Tx, e finality.Entry) error {
		seen = append(seen, e.TxID)
		return nil
	}
	Install(l, Producer{}, nil)
	write := func(ids ...string) error {
		evs := make([]finality.Event, len(ids))
		for i, id := range ids {
			evs[i] = finality.Event{TxID: id, Type: finality.PaymentInitiated, StateTo: "RECEIVED"}
		}
		return db.Write(ctx, func(tx *store.Tx) error {
			_, err := l.AppendFirstTx(ctx, tx, evs)
			return err
		})
	}
	if err := write("TX-A", "TX-B", "TX-C"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, []string{"TX-A", "TX-B", "TX-C"}) || count(t, db, "EventOutbox") != 3 {
		t.Fatalf("earlier hook saw %v, %d outbox rows", seen, count(t, db, "EventOutbox"))
	}
	if err := write("TX-D", "TX-B"); err == nil {
		t.Fatal("a second first entry of TX-B was accepted")
	}
	if n, m := count(t, db, "EventOutbox"), count(t, db, "FinalityLog"); n != 3 || m != 3 {
		t.Fatalf("after the refused batch: %d outbox rows, %d entries, want 3 and 3", n, m)
	}
}
