package idem

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// DoneAll leaves for each key the row Acquire then Complete leave (over
// more than one statement's worth of keys), Existing finds exactly the
// keys that have a row, and a key that exists fails DoneAll with
// ErrExists and, rolled back, changes nothing.
func TestDoneAllWritesWhatAcquireAndCompleteWrite(t *testing.T) {
	storetest.Each(t, testDoneAll)
}

func testDoneAll(t *testing.T, be storetest.Backend) {
	ctx := context.Background()
	k := New(clock.NewManual(t0), nil)
	one, many := storetest.Open(t, be, "one", store.Schema), storetest.Open(t, be, "many", store.Schema)
	var ds []Done
	var keys []string
	for i := range manyRows + 10 {
		body := []byte(fmt.Sprintf(`{"n":%d}`, i))
		d := Done{Key: fmt.Sprintf("PI:001:k-%04d", i), RequestHash: HashBody(body), Response: []byte(fmt.Sprintf(`{"txid":"TX-%d"}`, i))}
		ds, keys = append(ds, d), append(keys, d.Key)
		if err := one.Write(ctx, func(tx *store.Tx) error {
			if _, err := k.Acquire(ctx, tx, d.Key, body); err != nil {
				return err
			}
			return k.Complete(ctx, tx, d.Key, d.Response)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := many.Write(ctx, func(tx *store.Tx) error { return k.DoneAll(ctx, tx, ds) }); err != nil {
		t.Fatal(err)
	}
	if a, b := rows(t, one), rows(t, many); !reflect.DeepEqual(a, b) {
		t.Fatalf("DoneAll rows differ from Acquire+Complete's:\n%+v\n%+v", b[0], a[0])
	}
	var found map[string]bool
	if err := many.Read(ctx, func(tx *store.Tx) error {
		var err error
		found, err = k.Existing(ctx, tx, append([]string{"PI:001:absent"}, keys[len(keys)-3:]...))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(found, map[string]bool{keys[len(keys)-3]: true, keys[len(keys)-2]: true, keys[len(keys)-1]: true}) {
		t.Fatalf("Existing found %v", found)
	}
	before := rows(t, many)
	err := many.Write(ctx, func(tx *store.Tx) error {
		return k.DoneAll(ctx, tx, []Done{{Key: "PI:001:new", Response: []byte("{}")}, ds[3]})
	})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("DoneAll over an existing key: %v, want ErrExists", err)
	}
	if after := rows(t, many); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refused batch changed the keys: %d rows, was %d", len(after), len(before))
	}
}
