package orchestrator

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// BulkItem is one PaymentInitiated of a bulk submission and its
// idempotency key (the client's key, scoped to the issuer as for Submit).
type BulkItem struct {
	Req PaymentInitiated
	Key string
}

// BulkOutcome is what became of one BulkItem: Result when it was accepted
// (or Result.Replayed when its key was already done with the same body),
// else Err, the *domainerr.Error Submit would have returned for it alone
// (a refusal such as AMOUNT_EXCEEDS_TX_LIMIT, DAILY_LIMIT_EXCEEDED,
// IDEMPOTENCY_KEY_CONFLICT or IDEMPOTENCY_REPLAY).
type BulkOutcome struct {
	Result SubmitResult
	Err    error
}

// BulkThen runs inside a bulk submission's transaction after every item
// was decided, with the outcomes in item order: the caller's own rows
// (a checkpoint, the refusals) commit with the transfers or not at all.
// An error rolls the whole submission back and is SubmitBulk's error.
// It must not call Write on the coordinator database.
type BulkThen func(ctx context.Context, tx *store.Tx, out []BulkOutcome) error

// FailBulkBeforeThen is the failpoint hit inside a bulk submission's
// transaction after its items and before the caller's BulkThen (a kill
// there loses the whole uncommitted batch; docs/chaos.md).
const FailBulkBeforeThen = "orchestrator.bulk-before-then"

// SubmitBulk accepts many PaymentInitiated from issuerBankID in ONE write
// transaction (one commit, one fsync), each item exactly as Submit would
// accept it alone: the same validation, participant checks, per-transfer
// and daily limits (in item order), HIGH_VALUE escalation, idempotency
// per key (a done key with the same body is a replay and creates
// nothing), Transactions row, first FinalityLog entry and work item.
//
// A refused item writes nothing and its outcome carries the refusal; the
// others are accepted. The writes are batch-wide (bulkFastTx: one daily
// consumption per payer, multi-row INSERTs); when that cannot decide
// (a payer's daily limit reached inside the batch, a txid that exists),
// the transaction is rolled back and run again item by item, each in a
// savepoint (bulkCarefulTx), which refuses exactly the items Submit would. Errors that
// concern the whole submission are returned and nothing is written: the
// read-only mode (SYSTEM_*_READ_ONLY, checked once first), an issuer
// that is not identified, a database error, then's error. Nothing is
// acknowledged before the commit is durable: the outcomes are returned
// after it.
//
// The participants and PR-HV-THRESHOLD are read once per submission; the
// request bodies are encoded before the transaction, off the writer, on
// every core (encodeBulk).
func (o *Orchestrator) SubmitBulk(ctx context.Context, issuerBankID string, items []BulkItem, then BulkThen) ([]BulkOutcome, error) {
	if strings.TrimSpace(issuerBankID) == "" {
		return nil, domainerr.New("UNAUTHORIZED", "the issuing participant is not identified", nil)
	}
	out, bodies, hashes, err := encodeBulk(items)
	if err != nil {
		return nil, err
	}
	var accepted, replayed, refused int
	run := func(careful bool) error {
		return o.db.Write(ctx, func(tx *store.Tx) error {
			accepted, replayed, refused = 0, 0, 0
			res := make([]BulkOutcome, len(out))
			copy(res, out)
			if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
				return err
			}
			var err error
			if careful {
				err = o.bulkCarefulTx(ctx, tx, issuerBankID, items, bodies, res)
			} else {
				err = o.bulkFastTx(ctx, tx, issuerBankID, items, bodies, hashes, res)
			}
			if err != nil {
				return err
			}
			for _, r := range res {
				switch {
				case r.Err != nil:
					refused++
				case r.Result.Replayed:
					replayed++
				default:
					accepted++
				}
			}
			failpoint.Hit(FailBulkBeforeThen)
			if then != nil {
				if err := then(ctx, tx, res); err != nil {
					return err
				}
			}
			out = res
			return nil
		})
	}
	err = run(false)
	if errors.Is(err, errBulkCareful) {
		// Something unusual (a daily limit reached within the batch, a
		// txid that exists): nothing of the first run was committed; run
		// the submission again item by item, each in a savepoint, which
		// refuses exactly the items Submit would refuse.
		err = run(true)
	}
	if err != nil {
		return nil, err
	}
	o.log.InfoContext(ctx, "orchestrator.bulk_accepted", "issuer_bank_id", issuerBankID, "items", len(items),
		"accepted", accepted, "replayed", replayed, "refused", refused)
	return out, nil
}

// encodeBulk checks each item's key and encodes its request body and the
// body's hash, off the writer, split over every core: the outcomes so
// far (a bad key refuses its item), the bodies and their hashes.
func encodeBulk(items []BulkItem) ([]BulkOutcome, [][]byte, []sql.NullString, error) {
	out := make([]BulkOutcome, len(items))
	bodies := make([][]byte, len(items))
	hashes := make([]sql.NullString, len(items))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(items)/256))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(items); i += workers {
				it := items[i]
				if strings.TrimSpace(it.Key) == "" {
					out[i].Err = missingField("idempotency_key")
					continue
				}
				if err := ident.Check(ident.IdempotencyKey, "idempotency_key", it.Key); err != nil {
					out[i].Err = err
					continue
				}
				body, err := json.Marshal(it.Req)
				if err != nil {
					errs[w] = fmt.Errorf("orchestrator: encode request %d: %w", i, err)
					return
				}
				bodies[i], hashes[i] = body, idem.HashBody(body)
			}
		}()
	}
	wg.Wait()
	return out, bodies, hashes, errors.Join(errs...)
}

// errBulkCareful stops a bulk submission's fast run when a batch-wide
// write met something only the item-by-item run decides: SubmitBulk rolls
// it back and runs the submission again with bulkCarefulTx.
var errBulkCareful = errors.New("orchestrator: bulk submission needs the item-by-item run")

// bulkFastTx is a bulk submission with batch-wide writes. First which
// keys were used before (idem.Keys.Existing, one read per 256 keys); then
// per item, in order: a used key is claimed as Submit claims it (a
// replay, an in-flight or conflicting key is that item's outcome), a
// fresh one is not claimed yet; admitTx (a refusal writes nothing). Then
// for all admitted items at once: one daily-limit consumption per payer
// (the sum of its items), the Transactions rows and first FinalityLog
// entries (lane.Lanes.InsertNewTxsInTx), the progress rows and work
// items, and each key's DONE row with its stored answer
// (idem.Keys.DoneAll), all by multi-row INSERTs. A payer's sum over its
// daily limit, a key twice in the batch, or a txid or key that exists,
// returns errBulkCareful.
func (o *Orchestrator) bulkFastTx(ctx context.Context, tx *store.Tx, issuer string, items []BulkItem, bodies [][]byte, hashes []sql.NullString, res []BulkOutcome) error {
	env := &submitEnv{}
	type admitted struct {
		i int
		a admission
	}
	var ok []admitted
	sums := map[string]int64{}
	var payers []string
	keys := make([]string, 0, len(items))
	for i, it := range items {
		if res[i].Err == nil {
			keys = append(keys, idemKey(issuer, it.Key))
		}
	}
	exist, err := o.keys.Existing(ctx, tx, keys)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(keys))
	for i, it := range items {
		if res[i].Err != nil {
			continue
		}
		key := idemKey(issuer, it.Key)
		if seen[key] {
			return errBulkCareful // a key twice in one batch: the second is in flight, item by item
		}
		seen[key] = true
		if exist[key] {
			// Used before: the claim resolves it (a replay of a DONE key
			// with the same body, in flight, or a conflict).
			r, err := o.keys.Acquire(ctx, tx, key, bodies[i])
			if err != nil {
				if _, isDomain := domainerr.As(err); !isDomain {
					return err
				}
				res[i].Err = err
				continue
			}
			switch r.Outcome {
			case idem.Replay:
				if res[i].Result, err = replayOf(key, r.Response); err != nil {
					return err
				}
			case idem.InFlight:
				res[i].Err = inFlight(key)
			default:
				return errBulkCareful // gone since Existing read it: never within one transaction
			}
			continue
		}
		// A fresh key is not claimed now: its DONE row is written with the
		// batch (idem.Keys.DoneAll), and a refused item leaves none.
		a, err := o.admitTx(ctx, tx, it.Req, issuer, env)
		if err != nil {
			if _, isDomain := domainerr.As(err); !isDomain {
				return err
			}
			res[i].Err = err
			continue
		}
		if _, seen := sums[a.payer.BankID]; !seen {
			payers = append(payers, a.payer.BankID)
		}
		sum := sums[a.payer.BankID] + it.Req.Amount.Value
		if sum < 0 {
			return errBulkCareful // cannot overflow with 1..MAX_AMOUNT_VALUE per item; never silently
		}
		sums[a.payer.BankID] = sum
		ok = append(ok, admitted{i, a})
	}
	if len(ok) == 0 {
		return nil
	}
	dates := map[string]string{}
	for _, p := range payers {
		d, err := o.h.ConsumeDaily(ctx, tx, p, sums[p])
		if err != nil {
			if de, isDomain := domainerr.As(err); isDomain && de.Code == "DAILY_LIMIT_EXCEEDED" {
				return errBulkCareful
			}
			return err
		}
		dates[p] = d.BusinessDate
	}
	ns := make([]lane.NewTx, len(ok))
	for j, a := range ok {
		it := items[a.i]
		ns[j] = newTx(it.Req, it.Key, issuer, a.a, dates[a.a.payer.BankID])
	}
	ready := false // a READY item wakes the Run loops (wake.go), as enqueue does
	defer func() {
		if ready {
			o.wake.poke()
		}
	}()
	// The progress rows, work items and keys are written while the
	// transfers' events are signed (InsertNewTxsInTx's also).
	also := func() error {
		stamp := clock.Stamp(o.clk.Now())
		progress := make([][]any, len(ok))
		queue := make([][]any, len(ok))
		for j, a := range ok {
			kind, status := queueEntry(a.a.eff)
			ready = ready || status == StatusReady
			progress[j] = []any{ns[j].TxID, issuer, string(bodies[a.i]), stamp, stamp}
			queue[j] = []any{itemID(kind, ns[j].TxID), kind, ns[j].TxID, a.a.eff, status, stamp, stamp, stamp}
		}
		if err := insertRows(ctx, tx, "OrchestratorTransfers", strings.Split(progressColumns, ", "), progress); err != nil {
			return err
		}
		if err := insertRows(ctx, tx, "OrchestratorQueue", queueColumns, queue); err != nil {
			return err
		}
		done := make([]idem.Done, len(ok))
		for j, a := range ok {
			r := SubmitResult{TxID: ns[j].TxID, Lane: a.a.eff, RequestedLane: items[a.i].Req.Lane, State: string(lane.Received), AcceptedAt: stamp}
			resp, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("orchestrator: encode answer: %w", err)
			}
			done[j] = idem.Done{Key: idemKey(issuer, items[a.i].Key), RequestHash: hashes[a.i], Response: resp}
			res[a.i].Result = r
		}
		if err := o.keys.DoneAll(ctx, tx, done); err != nil {
			if errors.Is(err, idem.ErrExists) {
				return errBulkCareful
			}
			return err
		}
		return nil
	}
	if _, err := o.lanes.InsertNewTxsInTx(ctx, tx, ns, also); err != nil {
		if errors.Is(err, lane.ErrNotAllNew) {
			return errBulkCareful
		}
		return err
	}
	return nil
}

// queueColumns are the OrchestratorQueue columns enqueue sets for a new
// work item.
var queueColumns = []string{"item_id", "kind", "txid", "lane", "status", "next_attempt_at", "created_at", "updated_at"}

// bulkRows is how many rows one multi-row INSERT of bulkFastTx writes.
const bulkRows = 128

// insertRows inserts rows (all new) by multi-row INSERTs; a row whose key
// exists returns errBulkCareful.
func insertRows(ctx context.Context, tx *store.Tx, table string, cols []string, rows [][]any) error {
	args := make([]any, 0, bulkRows*len(cols))
	for lo := 0; lo < len(rows); lo += bulkRows {
		part := rows[lo:min(lo+bulkRows, len(rows))]
		args = args[:0]
		for _, r := range part {
			args = append(args, r...)
		}
		if _, err := tx.ExecContext(ctx, store.InsertRows(table, cols, len(part)), args...); err != nil {
			if store.IsUniqueViolation(err) {
				return errBulkCareful
			}
			return wrapDB("insert "+table, err)
		}
	}
	return nil
}

// bulkCarefulTx is a bulk submission item by item, each in a savepoint:
// exactly what len(items) Submits in a row would do.
func (o *Orchestrator) bulkCarefulTx(ctx context.Context, tx *store.Tx, issuer string, items []BulkItem, bodies [][]byte, res []BulkOutcome) error {
	env := &submitEnv{}
	for i, it := range items {
		if res[i].Err != nil {
			continue
		}
		r, err := o.bulkItemTx(ctx, tx, it, issuer, bodies[i], env)
		if err != nil {
			if _, ok := domainerr.As(err); !ok {
				return fmt.Errorf("orchestrator: bulk item %d: %w", i, err)
			}
			res[i].Err = err
			continue
		}
		res[i].Result = r
	}
	return nil
}

func replayOf(key string, stored []byte) (SubmitResult, error) {
	var r SubmitResult
	if err := json.Unmarshal(stored, &r); err != nil {
		return SubmitResult{}, fmt.Errorf("orchestrator: stored response of %s: %w", key, err)
	}
	r.Replayed = true
	return r, nil
}

func inFlight(key string) error {
	return domainerr.New("IDEMPOTENCY_REPLAY", "a request with this idempotency key is still being processed",
		map[string]any{"idempotency_key": key, "status": idem.StatusProcessing})
}

// bulkItemTx is one item of bulkCarefulTx in its own savepoint: the
// idempotency claim (idem.Keys.Acquire), acceptTx and the stored answer
// (idem.Keys.Complete), as idem.Keys.Once does for Submit. A refusal
// rolls the savepoint back: the item leaves no row (not even its claimed
// key) and no daily amount consumed.
func (o *Orchestrator) bulkItemTx(ctx context.Context, tx *store.Tx, it BulkItem, issuer string, body []byte, env *submitEnv) (res SubmitResult, err error) {
	key := idemKey(issuer, it.Key)
	if _, err := tx.ExecContext(ctx, "SAVEPOINT bulk_item"); err != nil {
		return SubmitResult{}, fmt.Errorf("savepoint: %w", err)
	}
	defer func() {
		if err != nil {
			if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO bulk_item"); rerr != nil {
				err = fmt.Errorf("roll back to savepoint: %w (after %w)", rerr, err)
				return
			}
		}
		if _, rerr := tx.ExecContext(ctx, "RELEASE bulk_item"); rerr != nil && err == nil {
			err = fmt.Errorf("release savepoint: %w", rerr)
		}
	}()
	r, err := o.keys.Acquire(ctx, tx, key, body)
	if err != nil {
		return SubmitResult{}, err
	}
	switch r.Outcome {
	case idem.Replay:
		return replayOf(key, r.Response)
	case idem.InFlight:
		return SubmitResult{}, inFlight(key)
	}
	if res, err = o.acceptTx(ctx, tx, it.Req, it.Key, issuer, body, env); err != nil {
		return SubmitResult{}, err
	}
	resp, err := json.Marshal(res)
	if err != nil {
		return SubmitResult{}, fmt.Errorf("encode answer: %w", err)
	}
	if err := o.keys.Complete(ctx, tx, key, resp); err != nil {
		return SubmitResult{}, err
	}
	return res, nil
}
