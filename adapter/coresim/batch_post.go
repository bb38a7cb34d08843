package coresim

import (
	"context"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/store"
)

// batchChunk is how many postings of an overnight file the batch run
// decides in memory before writing them: the accounts and holds of a chunk
// are read by a few IN queries, its journal and refusal rows written by
// multi-row INSERTs and each touched account's balance by one UPDATE.
// Memory is bounded by the chunk, not the file.
const batchChunk = 4096

// batchRows is how many rows one multi-row INSERT writes (11 columns:
// well below SQLite's bound on bound parameters) and how many keys one IN
// list carries.
const batchRows = 256

var (
	journalCols = []string{"ref", "txid", "account", "kind", "amount", "delta", "balance_after", "reversal_of",
		"source", "msg_id", "posted_at"}
	refusalCols = []string{"ref", "txid", "account", "kind", "amount", "reason_code", "source", "msg_id", "refused_at"}
)

// batchItem is one posting of a chunk and what the core decided for it.
type batchItem struct {
	in  PostIn
	out PostOut
	// delta and after are the applied posting's journal columns.
	delta, after int64
	tag          any // the caller's handle (the file's detail)
}

type batchAccount struct {
	balance int64
	open    bool
	closing bool // on closing hold: credits refused
	dirty   bool
}

type batchHold struct {
	txid     string
	amount   int64
	consumed bool
}

// batchPoster applies postings exactly as post does one by one (same
// checks in the same order, same rows, same ids in file order), a chunk at
// a time inside the batch run's transaction. Reversals, which read the
// journal, go through post itself after the chunk before them is written.
type batchPoster struct {
	c     *Core
	tx    *store.Tx
	now   string
	items []batchItem
	emit  func(*batchItem) error // called in order once an item's outcome is final
}

func (b *batchPoster) add(ctx context.Context, in PostIn, tag any) error {
	if in.Kind == KindReversal {
		if err := b.flush(ctx); err != nil {
			return err
		}
		out, err := b.c.post(ctx, b.tx, in, SourceBatch, "")
		if err != nil {
			return err
		}
		it := batchItem{in: in, out: out, tag: tag}
		return b.emit(&it)
	}
	b.items = append(b.items, batchItem{in: in, tag: tag})
	if len(b.items) >= batchChunk {
		return b.flush(ctx)
	}
	return nil
}

// inList runs query (which ends in "IN (") over keys in slices of
// batchRows, calling scan for every row.
func (b *batchPoster) inList(ctx context.Context, query string, keys []string, scan func(interface{ Scan(...any) error }) error) error {
	for lo := 0; lo < len(keys); lo += batchRows {
		part := keys[lo:min(lo+batchRows, len(keys))]
		args := make([]any, len(part))
		for i, k := range part {
			args[i] = k
		}
		rows, err := b.tx.QueryContext(ctx, query+"?"+strings.Repeat(", ?", len(part)-1)+")", args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				rows.Close()
				return err
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// flush decides the chunk's postings in file order against the accounts
// and holds read for it, writes the outcome and emits each item.
func (b *batchPoster) flush(ctx context.Context) error {
	if len(b.items) == 0 {
		return nil
	}
	items := b.items
	b.items = b.items[:0]
	accts := map[string]*batchAccount{}
	var keys, debitKeys []string
	debiting := map[string]bool{}
	for _, it := range items {
		if _, ok := accts[it.in.Account]; !ok {
			accts[it.in.Account] = nil
			keys = append(keys, it.in.Account)
		}
		if it.in.Kind == KindDebit && !debiting[it.in.Account] {
			debiting[it.in.Account] = true
			debitKeys = append(debitKeys, it.in.Account)
		}
	}
	if err := b.inList(ctx, `SELECT account, balance, status, closing_hold FROM CoreAccounts WHERE account IN (`, keys,
		func(r interface{ Scan(...any) error }) error {
			var a, status string
			var bal int64
			var closing int
			if err := r.Scan(&a, &bal, &status, &closing); err != nil {
				return err
			}
			accts[a] = &batchAccount{balance: bal, open: status == StatusOpen, closing: closing == 1}
			return nil
		}); err != nil {
		return fmt.Errorf("coresim: batch: read accounts: %w", err)
	}
	holds := map[string][]*batchHold{}
	if err := b.inList(ctx, `SELECT account, txid, amount FROM CoreHolds WHERE status = 'ACTIVE' AND account IN (`, debitKeys,
		func(r interface{ Scan(...any) error }) error {
			var a string
			h := &batchHold{}
			if err := r.Scan(&a, &h.txid, &h.amount); err != nil {
				return err
			}
			holds[a] = append(holds[a], h)
			return nil
		}); err != nil {
		return fmt.Errorf("coresim: batch: read holds: %w", err)
	}
	type consumed struct{ account, txid string }
	var consume []consumed
	var refused, applied []int
	for i := range items {
		it := &items[i]
		in := &it.in
		a := accts[in.Account]
		var delta int64
		switch {
		case in.Ref == "" || in.Amount <= 0:
			it.out.ReasonCode = ReasonInvalidAmount
		case a == nil || !a.open:
			it.out.ReasonCode = ReasonAccountNotFound
		case in.Kind == KindCredit && a.closing:
			it.out.ReasonCode = ReasonClosing
		case in.Kind == KindCredit:
			delta = in.Amount
		case in.Kind == KindDebit:
			delta = -in.Amount
		default:
			it.out.ReasonCode = ReasonInvalidRequest
		}
		if it.out.ReasonCode == "" && delta < 0 {
			// As post: holds of this transaction are consumed by its
			// debit; other holds reduce what is available.
			var heldOther int64
			mine := false
			for _, h := range holds[in.Account] {
				switch {
				case h.consumed:
				case h.txid != in.TxID:
					heldOther += h.amount
				default:
					mine = true
				}
			}
			if a.balance-heldOther+delta < 0 {
				it.out.ReasonCode = ReasonInsufficientFunds
			} else if mine {
				for _, h := range holds[in.Account] {
					if h.txid == in.TxID {
						h.consumed = true
					}
				}
				consume = append(consume, consumed{in.Account, in.TxID})
			}
		}
		if it.out.ReasonCode != "" {
			refused = append(refused, i)
			continue
		}
		a.balance += delta
		a.dirty = true
		it.delta, it.after = delta, a.balance
		it.out.Applied, it.out.BalanceAfter = true, a.balance
		applied = append(applied, i)
	}
	// Refusals, in file order.
	for lo := 0; lo < len(refused); lo += batchRows {
		part := refused[lo:min(lo+batchRows, len(refused))]
		args := make([]any, 0, len(part)*len(refusalCols))
		for _, i := range part {
			in := &items[i].in
			args = append(args, in.Ref, in.TxID, in.Account, in.Kind, in.Amount, items[i].out.ReasonCode, SourceBatch, nil, b.now)
		}
		if _, err := b.tx.ExecContext(ctx, store.InsertRows("CoreRefusals", refusalCols, len(part)), args...); err != nil {
			return fmt.Errorf("coresim: batch: record refusals: %w", err)
		}
	}
	for _, h := range consume {
		if _, err := b.tx.ExecContext(ctx, `UPDATE CoreHolds SET status = 'CONSUMED', updated_at = ?
			WHERE account = ? AND status = 'ACTIVE' AND txid = ?`, b.now, h.account, h.txid); err != nil {
			return fmt.Errorf("coresim: batch: consume holds: %w", err)
		}
	}
	for _, k := range keys {
		if a := accts[k]; a != nil && a.dirty {
			if _, err := b.tx.ExecContext(ctx, `UPDATE CoreAccounts SET balance = ?, updated_at = ? WHERE account = ?`,
				a.balance, b.now, k); err != nil {
				return fmt.Errorf("coresim: batch: update balance: %w", err)
			}
		}
	}
	// Journal lines, in file order: one multi-row INSERT numbers its rows
	// consecutively (AUTOINCREMENT inside the core's exclusive write
	// transaction), the last one being LastInsertId. PostgreSQL has no
	// LastInsertId: there each row is inserted with RETURNING.
	for lo := 0; lo < len(applied); lo += batchRows {
		part := applied[lo:min(lo+batchRows, len(applied))]
		if b.c.postgres {
			for _, i := range part {
				it := &items[i]
				id, err := store.InsertID(ctx, b.tx, "journal_id", store.InsertRows("CoreJournal", journalCols, 1),
					it.in.Ref, it.in.TxID, it.in.Account, it.in.Kind, it.in.Amount, it.delta, it.after, nil, SourceBatch, nil, b.now)
				if err != nil {
					return fmt.Errorf("coresim: batch: journal %s: %w", it.in.Ref, err)
				}
				it.out.JournalID = id
			}
			continue
		}
		args := make([]any, 0, len(part)*len(journalCols))
		for _, i := range part {
			it := &items[i]
			args = append(args, it.in.Ref, it.in.TxID, it.in.Account, it.in.Kind, it.in.Amount, it.delta, it.after, nil, SourceBatch, nil, b.now)
		}
		res, err := b.tx.ExecContext(ctx, store.InsertRows("CoreJournal", journalCols, len(part)), args...)
		if err != nil {
			return fmt.Errorf("coresim: batch: journal: %w", err)
		}
		last, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("coresim: batch: journal: %w", err)
		}
		for k, i := range part {
			items[i].out.JournalID = last - int64(len(part)-1-k)
		}
	}
	for i := range items {
		it := &items[i]
		if it.out.Applied {
			b.c.log.InfoContext(ctx, "coresim.post", "bank", b.c.bank, "ref", it.in.Ref, "txid", it.in.TxID, "account", it.in.Account,
				"kind", it.in.Kind, "amount", it.in.Amount, "balance_after", it.after, "journal_id", it.out.JournalID, "source", SourceBatch)
		} else {
			b.c.log.InfoContext(ctx, "coresim.refuse", "bank", b.c.bank, "ref", it.in.Ref, "txid", it.in.TxID,
				"account", it.in.Account, "kind", it.in.Kind, "amount", it.in.Amount, "reason_code", it.out.ReasonCode)
		}
		if err := b.emit(it); err != nil {
			return err
		}
	}
	return nil
}
