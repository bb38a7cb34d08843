package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/ident"
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
// others are accepted. (Items run without savepoints; when an item is
// refused after it wrote, which takes a txid that exists or a tampered
// chain, the transaction is rolled back and run again with a savepoint
// per item.) Errors that
// concern the whole submission are returned and nothing is written: the
// read-only mode (SYSTEM_*_READ_ONLY, checked once first), an issuer
// that is not identified, a database error, then's error. Nothing is
// acknowledged before the commit is durable: the outcomes are returned
// after it.
//
// The participants and PR-HV-THRESHOLD are read once per submission; the
// request bodies are encoded before the transaction, off the writer.
func (o *Orchestrator) SubmitBulk(ctx context.Context, issuerBankID string, items []BulkItem, then BulkThen) ([]BulkOutcome, error) {
	if strings.TrimSpace(issuerBankID) == "" {
		return nil, domainerr.New("UNAUTHORIZED", "the issuing participant is not identified", nil)
	}
	out := make([]BulkOutcome, len(items))
	bodies := make([][]byte, len(items))
	for i, it := range items {
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
			return nil, fmt.Errorf("orchestrator: encode request %d: %w", i, err)
		}
		bodies[i] = body
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
			env := &submitEnv{}
			for i, it := range items {
				if res[i].Err != nil {
					refused++
					continue
				}
				r, err := o.bulkItemTx(ctx, tx, it, issuerBankID, bodies[i], env, careful)
				if err != nil {
					if _, ok := domainerr.As(err); !ok || errors.Is(err, errBulkCareful) {
						return err
					}
					res[i].Err = err
					refused++
					continue
				}
				res[i].Result = r
				if r.Replayed {
					replayed++
				} else {
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
	err := run(false)
	if errors.Is(err, errBulkCareful) {
		// An item was refused after it had written: run the submission
		// again with a savepoint per item (nothing of the first run was
		// committed).
		err = run(true)
	}
	if err != nil {
		return nil, err
	}
	o.log.InfoContext(ctx, "orchestrator.bulk_accepted", "issuer_bank_id", issuerBankID, "items", len(items),
		"accepted", accepted, "replayed", replayed, "refused", refused)
	return out, nil
}

// errBulkCareful stops a bulk submission run without savepoints when an
// item was refused after it had written (SubmitBulk runs it again with a
// savepoint per item).
var errBulkCareful = errors.New("orchestrator: a bulk item was refused after writing; run again with savepoints")

// bulkItemTx is one item of SubmitBulk: the idempotency claim
// (idem.Keys.Acquire), acceptTx and the stored answer
// (idem.Keys.Complete), as idem.Keys.Once does for Submit. A refused item
// must leave no row (not even its claimed key) and no daily amount
// consumed. Careful, the item runs in its own savepoint, rolled back on a
// refusal. Otherwise (the common case: two statements fewer per item) a
// refusal before acceptTx wrote anything abandons the claimed key, and a
// refusal after it returns errBulkCareful.
func (o *Orchestrator) bulkItemTx(ctx context.Context, tx *store.Tx, it BulkItem, issuer string, body []byte, env *submitEnv, careful bool) (res SubmitResult, err error) {
	key := idemKey(issuer, it.Key)
	if careful {
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
	}
	r, err := o.keys.Acquire(ctx, tx, key, body)
	if err != nil {
		return SubmitResult{}, err // nothing claimed
	}
	switch r.Outcome {
	case idem.Replay:
		if err := json.Unmarshal(r.Response, &res); err != nil {
			return SubmitResult{}, fmt.Errorf("stored response of %s: %w", key, err)
		}
		res.Replayed = true
		return res, nil
	case idem.InFlight:
		return SubmitResult{}, domainerr.New("IDEMPOTENCY_REPLAY", "a request with this idempotency key is still being processed",
			map[string]any{"idempotency_key": key, "status": idem.StatusProcessing})
	}
	if res, err = o.acceptTx(ctx, tx, it.Req, it.Key, issuer, body, env); err != nil {
		if careful {
			return SubmitResult{}, err
		}
		if _, ok := domainerr.As(err); !ok {
			return SubmitResult{}, err
		}
		if env.wrote {
			return SubmitResult{}, fmt.Errorf("%w: %w", errBulkCareful, err)
		}
		if _, aerr := o.keys.Abandon(ctx, tx, key); aerr != nil {
			return SubmitResult{}, aerr
		}
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
