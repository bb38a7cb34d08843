package chaos_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// files are the data folder's databases, opened directly (as an auditor
// reads them), with no schema applied.
type files struct {
	zc      *store.DB
	adapter map[string]*store.DB
	core    map[string]*store.DB
}

func openFiles(ctx context.Context, dir string) (*files, error) {
	f := &files{adapter: map[string]*store.DB{}, core: map[string]*store.DB{}}
	var err error
	if f.zc, err = store.Open(ctx, filepath.Join(dir, "zc.db"), ""); err != nil {
		return nil, err
	}
	for _, b := range bankIDs {
		if f.adapter[b], err = store.Open(ctx, filepath.Join(dir, "adapter-"+b+".db"), ""); err != nil {
			f.close()
			return nil, err
		}
		if f.core[b], err = store.Open(ctx, filepath.Join(dir, "core-"+b+".db"), ""); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

func (f *files) close() {
	for _, db := range append([]*store.DB{f.zc}, values(f.adapter, f.core)...) {
		if db != nil {
			db.Close()
		}
	}
}

func values(ms ...map[string]*store.DB) []*store.DB {
	var out []*store.DB
	for _, m := range ms {
		for _, b := range bankIDs {
			out = append(out, m[b])
		}
	}
	return out
}

// each runs query on db and calls scan for every row.
func each(ctx context.Context, db *store.DB, query string, scan func(*sql.Rows) error, args ...any) error {
	return db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", filepath.Base(db.Path()), query, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return fmt.Errorf("%s: %s: %w", filepath.Base(db.Path()), query, err)
			}
		}
		return rows.Err()
	})
}

// claims is the work a dead process left claimed, by where it is held.
type claims struct {
	Queue    map[string]string // OrchestratorQueue item_id → claimed_by
	Outbox   map[string]string // "bank/outbox id" → status:claim_token (CLAIMED or IN_DOUBT)
	Requests map[string]bool   // "bank/IdempotencyKeys key" left PROCESSING at an adapter
	InFlight map[string]string // txid → state, every transfer not terminal
}

func (c claims) total() int { return len(c.Queue) + len(c.Outbox) + len(c.Requests) }

// readClaims reads what is claimed or in flight now.
func (f *files) readClaims(ctx context.Context) (claims, error) {
	c := claims{Queue: map[string]string{}, Outbox: map[string]string{}, Requests: map[string]bool{}, InFlight: map[string]string{}}
	err := each(ctx, f.zc, `SELECT item_id, COALESCE(claimed_by,'') FROM OrchestratorQueue WHERE status = 'CLAIMED'`, func(r *sql.Rows) error {
		var id, by string
		err := r.Scan(&id, &by)
		c.Queue[id] = by
		return err
	})
	if err != nil {
		return c, err
	}
	if err := each(ctx, f.zc, `SELECT txid, state FROM Transactions`, func(r *sql.Rows) error {
		var id, st string
		err := r.Scan(&id, &st)
		if !lane.TxState(st).Terminal() {
			c.InFlight[id] = st
		}
		return err
	}); err != nil {
		return c, err
	}
	for _, b := range bankIDs {
		if err := each(ctx, f.adapter[b], `SELECT id, status, COALESCE(claim_token,'') FROM AdapterOutbox WHERE status IN ('CLAIMED','IN_DOUBT')`, func(r *sql.Rows) error {
			var id int64
			var st, tok string
			err := r.Scan(&id, &st, &tok)
			c.Outbox[fmt.Sprintf("%s/%d", b, id)] = st + ":" + tok
			return err
		}); err != nil {
			return c, err
		}
		if err := each(ctx, f.adapter[b], `SELECT key FROM IdempotencyKeys WHERE status = 'PROCESSING'`, func(r *sql.Rows) error {
			var k string
			err := r.Scan(&k)
			c.Requests[b+"/"+k] = true
			return err
		}); err != nil {
			return c, err
		}
	}
	return c, nil
}

// stillHeld lists the claims of old that now are exactly as they were
// (same owner, same token, still in progress), and the transfers of old's
// in-flight set that are still not terminal.
func stillHeld(old, now claims) (held, inFlight map[string]bool) {
	held, inFlight = map[string]bool{}, map[string]bool{}
	for id, by := range old.Queue {
		if now.Queue[id] == by {
			held["queue/"+id] = true
		}
	}
	for id, st := range old.Outbox {
		if now.Outbox[id] == st {
			held["outbox/"+id] = true
		}
	}
	for k := range old.Requests {
		if now.Requests[k] {
			held["request/"+k] = true
		}
	}
	for id := range old.InFlight {
		if _, ok := now.InFlight[id]; ok {
			inFlight[id] = true
		}
	}
	return held, inFlight
}

// busy counts what keeps the node from being quiescent: transfers not
// terminal, work items due or claimed, postings not yet final at their
// core, adapter requests in progress.
type busy struct {
	Transfers, WorkItems, Postings, Requests int
}

func (b busy) zero() bool { return b == busy{} }

func (b busy) String() string {
	return fmt.Sprintf("%d transfers not terminal, %d work items READY/CLAIMED, %d postings PENDING/CLAIMED/IN_DOUBT, %d adapter requests PROCESSING",
		b.Transfers, b.WorkItems, b.Postings, b.Requests)
}

func (f *files) readBusy(ctx context.Context) (busy, error) {
	var b busy
	c, err := f.readClaims(ctx)
	if err != nil {
		return b, err
	}
	b.Transfers, b.Requests = len(c.InFlight), len(c.Requests)
	count := func(db *store.DB, q string) (int, error) {
		var n int
		err := db.Read(ctx, func(tx *store.Tx) error { return tx.QueryRowContext(ctx, q).Scan(&n) })
		return n, err
	}
	if b.WorkItems, err = count(f.zc, `SELECT count(*) FROM OrchestratorQueue WHERE status IN ('READY','CLAIMED')`); err != nil {
		return b, err
	}
	for _, id := range bankIDs {
		n, err := count(f.adapter[id], `SELECT count(*) FROM AdapterOutbox WHERE status IN ('PENDING','CLAIMED','IN_DOUBT')`)
		if err != nil {
			return b, err
		}
		b.Postings += n
	}
	return b, nil
}
