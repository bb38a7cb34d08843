package adapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
	"github.com/zcgw/zcgw/outbox"
)

// validate checks a request body and the adapter's currency.
func (a *Adapter) validate(req bankapi.Request, amounts ...bankapi.Amount) error {
	if err := req.Validate(); err != nil {
		return err
	}
	for _, am := range amounts {
		if !a.accepted[am.Currency] {
			return domainerr.New("INVALID_CURRENCY",
				fmt.Sprintf("%s: this bank keeps no account in %s", req.Command(), am.Currency),
				map[string]any{"command": string(req.Command()), "field": "amount.currency", "currency": am.Currency})
		}
	}
	return nil
}

// accountCurrency is the currency s is kept in (NULL: the adapter's).
func (a *Adapter) accountCurrency(s Shadow) string {
	if s.Currency == "" {
		return a.currency
	}
	return s.Currency
}

// checkCurrency refuses an amount in another currency than the account's
// (a yen debit of a dollar account): INVALID_CURRENCY.
func (a *Adapter) checkCurrency(s Shadow, currency string) error {
	acct := a.accountCurrency(s)
	if acct != currency {
		return domainerr.New("INVALID_CURRENCY", fmt.Sprintf("account is kept in %s, the amount is in %s", acct, currency),
			map[string]any{"field": "amount.currency", "currency": currency, "account_currency": acct, "account_hash": s.Hash})
	}
	return nil
}

// requireBank refuses money and check commands before initialize-bank.
func (a *Adapter) requireBank(ctx context.Context, tx *store.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterBank WHERE bank_id = ?`, a.bank).Scan(&n); err != nil {
		return fmt.Errorf("adapter: read bank: %w", err)
	}
	if n == 0 {
		return domainerr.New("STATE_GUARD", "bank is not initialized (initialize-bank first)", map[string]any{"bank_id": a.bank})
	}
	return nil
}

// ReserveFunds places an H_RESERVED hold on the shadow: approved when the
// shadow's available balance (core balance - holds - pending debits)
// covers the amount. A refusal is an ERROR body (cached like any answer).
func (a *Adapter) ReserveFunds(ctx context.Context, req bankapi.ReserveFundsRequest) (bankapi.ReserveFundsResponse, error) {
	if err := a.validate(&req, req.Amount); err != nil {
		return bankapi.ReserveFundsResponse{}, err
	}
	return once(ctx, a, string(bankapi.ReserveFunds), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.ReserveFundsResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.ReserveFundsResponse{}, err
		}
		ref, reason, err := a.reserveTx(ctx, tx, req.RequestIDValue, req.TxID, req.AccountHash, req.Amount, "RSV-"+uuid.New())
		if err != nil {
			return bankapi.ReserveFundsResponse{}, err
		}
		if reason != "" {
			return bankapi.ReserveFundsResponse{Result: bankapi.ResultError, ReasonCode: reason}, nil
		}
		return bankapi.ReserveFundsResponse{Result: bankapi.ResultReserved, ReservationRef: ref}, nil
	})
}

// reserveTx places a hold; reason is a non-empty refusal reason instead.
func (a *Adapter) reserveTx(ctx context.Context, tx *store.Tx, requestID, txid, hash string, amount bankapi.Amount, ref string) (string, string, error) {
	s, err := readShadow(ctx, tx, hash)
	if domainerr.Has(err, "ACCOUNT_NOT_FOUND") {
		return "", bankapi.ReasonAccountNotFound, nil
	}
	if err != nil {
		return "", "", err
	}
	if err := a.checkCurrency(s, amount.Currency); err != nil {
		return "", "", err
	}
	if s.Lifecycle == LifecycleClosed {
		return "", bankapi.ReasonAccountNotFound, nil
	}
	if s.Status == AccountFrozen {
		return "", bankapi.ReasonAccountFrozen, nil
	}
	if s.Available < amount.Value {
		a.log.InfoContext(ctx, "adapter.reserve_refused", "txid", txid, "account_hash", hash, "amount", amount.Value, "available_balance", s.Available)
		return "", bankapi.ReasonInsufficientFunds, nil
	}
	now := a.now()
	_, err = tx.ExecContext(ctx, `INSERT INTO AdapterHolds
		(reservation_ref, txid, request_id, account_hash, amount, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, 'HELD', ?, ?)`, ref, txid, requestID, hash, amount.Value, now, now)
	if err != nil {
		return "", "", fmt.Errorf("adapter: hold %s: %w", ref, err)
	}
	a.log.InfoContext(ctx, "adapter.reserve", "txid", txid, "account_hash", hash, "amount", amount.Value, "reservation_ref", ref)
	return ref, "", nil
}

type hold struct {
	ref, txid, hash, status string
	amount                  int64
}

func readHold(ctx context.Context, tx *store.Tx, ref string) (hold, error) {
	var h hold
	err := tx.QueryRowContext(ctx, `SELECT reservation_ref, txid, account_hash, status, amount FROM AdapterHolds WHERE reservation_ref = ?`, ref).
		Scan(&h.ref, &h.txid, &h.hash, &h.status, &h.amount)
	if errors.Is(err, sql.ErrNoRows) {
		return h, domainerr.New("TX_NOT_FOUND", "no reservation with this reservation_ref", map[string]any{"reservation_ref": ref})
	}
	if err != nil {
		return h, fmt.Errorf("adapter: read hold %s: %w", ref, err)
	}
	return h, nil
}

// existingPosting finds the posting of this kind already queued for a
// txid on an account: execute-debit/credit are idempotent per (txid,
// account) as well as per request_id, so a ZC retry under a new
// request_id cannot post twice.
func existingPosting(ctx context.Context, tx *store.Tx, txid, kind, hash string) (ref, createdAt string, amount int64, found bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT ref, amount, created_at FROM AdapterPostings
		WHERE txid = ? AND kind = ? AND account_hash = ? ORDER BY created_at LIMIT 1`, txid, kind, hash).Scan(&ref, &amount, &createdAt)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", 0, false, nil
	}
	if err != nil {
		return "", "", 0, false, fmt.Errorf("adapter: read postings of %s: %w", txid, err)
	}
	return ref, createdAt, amount, true, nil
}

// replayed answers a retry of an execute command under a new request_id
// with the first posting's proof; another amount is a conflict.
func (a *Adapter) replayed(ctx context.Context, tx *store.Tx, txid, kind, hash, proofType string, amount int64) (bankapi.ExecuteResponse, bool, error) {
	ref, at, amt, found, err := existingPosting(ctx, tx, txid, kind, hash)
	if err != nil || !found {
		return bankapi.ExecuteResponse{}, false, err
	}
	if amt != amount {
		return bankapi.ExecuteResponse{}, true, domainerr.New("IDEMPOTENCY_KEY_CONFLICT",
			"this txid was already posted on this account with another amount",
			map[string]any{"txid": txid, "kind": kind, "amount": amt, "requested": amount})
	}
	a.log.InfoContext(ctx, "adapter.replay_by_txid", "txid", txid, "kind", kind, "ref", ref)
	return bankapi.ExecuteResponse{Result: bankapi.ResultOK, BankProofRef: a.proof(proofType, ref, at)}, true, nil
}

// The lanes whose postings a batch-window bank takes in its overnight file.
const (
	laneBulk     = "BULK"
	laneDeferred = "DEFERRED"
)

// routeFor is the route of an execute-debit/credit posting: a BULK or
// DEFERRED posting of a batch-window bank (Config.RealTime false) goes to
// the core in the overnight posting file (jobs/overnight), every other
// posting over MQ. A posting the file cannot carry (outbox.FitsFile) goes
// over MQ too, drained after the batch window as before.
func (a *Adapter) routeFor(ctx context.Context, lane string, p outbox.Posting) outbox.Route {
	if a.realTime || (lane != laneBulk && lane != laneDeferred) {
		return outbox.RouteMQ
	}
	if err := outbox.FitsFile(p); err != nil {
		a.log.WarnContext(ctx, "adapter.file_route_refused", "txid", p.TxID, "lane", lane, "err", err.Error())
		return outbox.RouteMQ
	}
	return outbox.RouteFILE
}

// queuePosting queues a posting over MQ in the outbox and records the
// adapter's side of it, inside the caller's transaction.
func (a *Adapter) queuePosting(ctx context.Context, tx *store.Tx, s Shadow, txid, requestID, reservation string,
	kind outbox.Kind, direction int, amount int64, reversalOf string) (string, error) {
	return a.queueLanePosting(ctx, tx, s, "", txid, requestID, reservation, kind, direction, amount, reversalOf)
}

// queueLanePosting is queuePosting for a posting of a transfer on lane,
// routed by routeFor.
func (a *Adapter) queueLanePosting(ctx context.Context, tx *store.Tx, s Shadow, lane, txid, requestID, reservation string,
	kind outbox.Kind, direction int, amount int64, reversalOf string) (string, error) {
	if err := guardLifecycleTx(ctx, tx, s, kind); err != nil {
		return "", err
	}
	ref := newRef()
	p := outbox.Posting{Ref: ref, TxID: txid, Bank: a.bank, Account: s.CoreAccount,
		Kind: kind, Amount: amount, ReversalOf: reversalOf}
	p.Route = a.routeFor(ctx, lane, p)
	id, err := a.ob.Enqueue(ctx, tx, p)
	if err != nil {
		return "", err
	}
	var rev, rsv any
	if reversalOf != "" {
		rev = reversalOf
	}
	if reservation != "" {
		rsv = reservation
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO AdapterPostings
		(ref, outbox_id, txid, account_hash, kind, direction, amount, reversal_of, request_id, reservation_ref, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ref, id, txid, s.Hash, string(kind), direction, amount, rev, requestID, rsv, a.now())
	if err != nil {
		return "", fmt.Errorf("adapter: record posting %s: %w", ref, err)
	}
	a.log.InfoContext(ctx, "adapter.posting_queued", "txid", txid, "ref", ref, "kind", string(kind),
		"account_hash", s.Hash, "amount", amount, "reversal_of", reversalOf, "route", string(p.Route))
	return ref, nil
}

func (a *Adapter) proof(proofType, ref, recordedAt string) bankapi.BankProofRef {
	return bankapi.BankProofRef{IssuerBankID: a.bank, ProofType: proofType, ProofID: "PRF-" + a.bank + "-" + ref,
		RecordedAt: recordedAt, Venue: bankapi.VenueBankLedger}
}

// ExecuteDebit approves a debit against the shadow and queues it in the
// outbox, in the same transaction as the shadow change (hold consumed or
// pending debit added) and the idempotency completion. The core sees it
// when the outbox drains — immediately if it is online, after its batch
// window if not — or, for a BULK/DEFERRED debit of a batch-window bank, in
// the bank's overnight posting file (routeFor).
func (a *Adapter) ExecuteDebit(ctx context.Context, req bankapi.ExecuteDebitRequest) (bankapi.ExecuteResponse, error) {
	if err := a.validate(&req, req.Amount); err != nil {
		return bankapi.ExecuteResponse{}, err
	}
	return once(ctx, a, string(bankapi.ExecuteDebit), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.ExecuteResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.ExecuteResponse{}, err
		}
		hash := req.PayerAccountHash
		var reservation string
		var h hold
		if req.HReservation != nil && req.HReservation.ReservationID != "" {
			var err error
			if h, err = readHold(ctx, tx, req.HReservation.ReservationID); err != nil {
				return bankapi.ExecuteResponse{}, err
			}
			if hash != "" && hash != h.hash {
				return bankapi.ExecuteResponse{}, domainerr.New("INVALID_REQUEST", "payer_account_hash differs from the reserved account",
					map[string]any{"reservation_ref": h.ref, "txid": req.TxID})
			}
			hash, reservation = h.hash, h.ref
		}
		// A HIGH_VALUE debit is answered with the isolation proof: the
		// debited funds are held apart for the RTGS leg (002 §12.3).
		proofType := bankapi.ProofPayerExec
		if req.Lane == bankapi.LaneHighValue {
			proofType = bankapi.ProofPayerHVIsolation
		}
		if r, done, err := a.replayed(ctx, tx, req.TxID, string(outbox.Debit), hash, proofType, req.Amount.Value); done || err != nil {
			return r, err
		}
		if reservation != "" {
			details := map[string]any{"reservation_ref": h.ref, "txid": req.TxID, "hold_status": h.status}
			switch {
			case h.txid != req.TxID:
				return bankapi.ExecuteResponse{}, domainerr.New("STATE_GUARD", "reservation belongs to another txid", details)
			case h.status != "HELD":
				return bankapi.ExecuteResponse{}, domainerr.New("STATE_GUARD", "reservation is not HELD", details)
			case req.Amount.Value > h.amount:
				details["reserved"] = h.amount
				return bankapi.ExecuteResponse{}, domainerr.New("STATE_GUARD", "debit exceeds the reserved amount", details)
			}
			// Guarded (CAS) consumption: only a HELD hold can be consumed.
			res, err := tx.ExecContext(ctx, `UPDATE AdapterHolds SET status = 'CONSUMED', consumed_by = ?, updated_at = ?
				WHERE reservation_ref = ? AND status = 'HELD'`, req.RequestIDValue, a.now(), h.ref)
			if err != nil {
				return bankapi.ExecuteResponse{}, fmt.Errorf("adapter: consume hold %s: %w", h.ref, err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return bankapi.ExecuteResponse{}, domainerr.New("CONCURRENCY_CONFLICT", "reservation was consumed concurrently", details)
			}
		}
		s, err := readShadow(ctx, tx, hash)
		if err != nil {
			return bankapi.ExecuteResponse{}, err
		}
		if err := a.checkCurrency(s, req.Amount.Currency); err != nil {
			return bankapi.ExecuteResponse{}, err
		}
		if s.Status == AccountFrozen {
			return bankapi.ExecuteResponse{}, domainerr.New("ACCOUNT_FROZEN", "payer account is frozen", map[string]any{"account_hash": hash})
		}
		// With the hold consumed its amount no longer counts in Holds, so the
		// same check covers both the reserved and the HIGH_VALUE path.
		if s.Available < req.Amount.Value {
			return bankapi.ExecuteResponse{}, domainerr.New("RESERVE_FAILED", "insufficient available balance on the shadow ledger",
				map[string]any{"reason": bankapi.ReasonInsufficientFunds, "txid": req.TxID, "requested": req.Amount.Value, "available": s.Available})
		}
		ref, err := a.queueLanePosting(ctx, tx, s, req.Lane, req.TxID, req.RequestIDValue, reservation, outbox.Debit, -1, req.Amount.Value, "")
		if err != nil {
			return bankapi.ExecuteResponse{}, err
		}
		return bankapi.ExecuteResponse{Result: bankapi.ResultOK, BankProofRef: a.proof(proofType, ref, a.now())}, nil
	})
}

// ExecuteCredit queues a credit for the payee account in the outbox, with
// the idempotency completion in the same transaction. For an account the
// bank does not hold it credits the custody account (Config.CustodyAccount)
// and answers with custody_detail, or ACCOUNT_NOT_FOUND without one. The
// payee account's incoming-transfer filters run first (screenCredit): a
// held credit answers HELD with its approval_id, a refused one
// STATE_GUARD, neither cached under the request_id.
func (a *Adapter) ExecuteCredit(ctx context.Context, req bankapi.ExecuteCreditRequest) (bankapi.ExecuteResponse, error) {
	if err := a.validate(&req, req.Amount); err != nil {
		return bankapi.ExecuteResponse{}, err
	}
	if held, err := a.screenCredit(ctx, req); err != nil || held != nil {
		if held != nil {
			return *held, nil
		}
		return bankapi.ExecuteResponse{}, err
	}
	return once(ctx, a, string(bankapi.ExecuteCredit), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.ExecuteResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.ExecuteResponse{}, err
		}
		if r, done, err := a.replayed(ctx, tx, req.TxID, string(outbox.Credit), req.PayeeAccountHash, bankapi.ProofPayeeExec, req.Amount.Value); done || err != nil {
			return r, err
		}
		s, err := readShadow(ctx, tx, req.PayeeAccountHash)
		if err == nil && s.Lifecycle == LifecycleClosingHold {
			return bankapi.ExecuteResponse{}, lifecycleRefusal(s, "credit")
		}
		if err == nil && s.Lifecycle == LifecycleClosed {
			err = accountNotFound(req.PayeeAccountHash) // closed: custody, as for an account the bank no longer holds
		}
		var custody *bankapi.CustodyDetail
		if domainerr.Has(err, "ACCOUNT_NOT_FOUND") && a.custody != "" {
			// The payee account is gone: the money goes to custody, the
			// transfer is not failed (spec 004 execute-credit).
			if r, done, err := a.replayed(ctx, tx, req.TxID, string(outbox.Credit), a.custody, bankapi.ProofPayeeExec, req.Amount.Value); done || err != nil {
				return r, err
			}
			s, err = readShadow(ctx, tx, a.custody)
			custody = &bankapi.CustodyDetail{IsCustody: true, ReasonCode: "ACCOUNT_CLOSED"}
		}
		if err != nil {
			return bankapi.ExecuteResponse{}, err
		}
		if err := a.checkCurrency(s, req.Amount.Currency); err != nil {
			return bankapi.ExecuteResponse{}, err
		}
		ref, err := a.queueLanePosting(ctx, tx, s, req.Lane, req.TxID, req.RequestIDValue, "", outbox.Credit, 1, req.Amount.Value, "")
		if err != nil {
			return bankapi.ExecuteResponse{}, err
		}
		proof := a.proof(bankapi.ProofPayeeExec, ref, a.now())
		if custody != nil {
			custody.CustodyAccountRef = "CUSTODY-" + ref
			proof.CustodyDetail = custody
			a.log.WarnContext(ctx, "adapter.credit_to_custody", "txid", req.TxID, "account_hash", req.PayeeAccountHash, "ref", ref)
		}
		return bankapi.ExecuteResponse{Result: bankapi.ResultOK, BankProofRef: proof}, nil
	})
}

// ReleaseReserve releases a HELD hold (idempotent: releasing a released
// hold answers RELEASED again). A hold already consumed by execute-debit
// cannot be released: the money left the shadow, and undoing it is a
// compensation (Compensate), not a release.
func (a *Adapter) ReleaseReserve(ctx context.Context, req bankapi.ReleaseReserveRequest) (bankapi.ReleaseReserveResponse, error) {
	if err := a.validate(&req); err != nil {
		return bankapi.ReleaseReserveResponse{}, err
	}
	return once(ctx, a, string(bankapi.ReleaseReserve), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.ReleaseReserveResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.ReleaseReserveResponse{}, err
		}
		h, err := readHold(ctx, tx, req.ReservationRef)
		if err != nil {
			return bankapi.ReleaseReserveResponse{}, err
		}
		details := map[string]any{"reservation_ref": h.ref, "txid": req.TxID, "hold_status": h.status}
		if h.txid != req.TxID {
			return bankapi.ReleaseReserveResponse{}, domainerr.New("STATE_GUARD", "reservation belongs to another txid", details)
		}
		switch h.status {
		case "CONSUMED":
			return bankapi.ReleaseReserveResponse{}, domainerr.New("STATE_GUARD", "reservation was consumed by execute-debit", details)
		case "HELD":
			res, err := tx.ExecContext(ctx, `UPDATE AdapterHolds SET status = 'RELEASED', updated_at = ?
				WHERE reservation_ref = ? AND status = 'HELD'`, a.now(), h.ref)
			if err != nil {
				return bankapi.ReleaseReserveResponse{}, fmt.Errorf("adapter: release hold %s: %w", h.ref, err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return bankapi.ReleaseReserveResponse{}, domainerr.New("CONCURRENCY_CONFLICT", "reservation changed concurrently", details)
			}
			a.log.InfoContext(ctx, "adapter.release", "txid", req.TxID, "reservation_ref", h.ref, "amount", h.amount)
		}
		return bankapi.ReleaseReserveResponse{Result: bankapi.ResultReleased, ReservationRef: h.ref}, nil
	})
}

// LegReadyCheck delegates: the PAYER leg is reserve-funds (a hold under
// txid bankapi.LegTxID, reservation_ref bankapi.LegReservationRef: the
// leg's transfer consumes it at execute-debit), the PAYEE leg is
// account-verify without a name (spec 001 §18.3 #9).
func (a *Adapter) LegReadyCheck(ctx context.Context, req bankapi.LegReadyCheckRequest) (bankapi.CheckResponse, error) {
	if err := a.validate(&req, req.Amount); err != nil {
		return bankapi.CheckResponse{}, err
	}
	return once(ctx, a, string(bankapi.LegReadyCheck), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.CheckResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.CheckResponse{}, err
		}
		if req.Role == bankapi.RolePayer {
			_, reason, err := a.reserveTx(ctx, tx, req.RequestIDValue, bankapi.LegTxID(req.GTID, req.LegID), req.AccountHash,
				req.Amount, bankapi.LegReservationRef(req.GTID, req.LegID))
			if store.IsUniqueViolation(err) {
				return bankapi.CheckResponse{}, domainerr.New("STATE_GUARD", "this leg already holds a reservation",
					map[string]any{"gtid": req.GTID, "leg_id": req.LegID})
			}
			if err != nil {
				return bankapi.CheckResponse{}, err
			}
			if reason != "" {
				return bankapi.CheckResponse{Result: bankapi.ResultNG, ReasonCode: reason}, nil
			}
			return bankapi.CheckResponse{Result: bankapi.ResultOK}, nil
		}
		v, err := a.verifyTx(ctx, tx, req.AccountHash, "")
		if err != nil {
			return bankapi.CheckResponse{}, err
		}
		switch {
		case v.Result != bankapi.ResultMatched:
			return bankapi.CheckResponse{Result: bankapi.ResultNG, ReasonCode: bankapi.ReasonAccountNotFound}, nil
		case v.FraudWarning: // a frozen account cannot take the credit
			return bankapi.CheckResponse{Result: bankapi.ResultNG, ReasonCode: bankapi.ReasonAccountFrozen}, nil
		}
		s, err := readShadow(ctx, tx, req.AccountHash)
		if err != nil {
			return bankapi.CheckResponse{}, err
		}
		if err := a.checkCurrency(s, req.Amount.Currency); err != nil {
			return bankapi.CheckResponse{}, err
		}
		return bankapi.CheckResponse{Result: bankapi.ResultOK}, nil
	})
}

// AuthorityCheck screens a transfer against the bank's local AML/sanctions
// list (AdapterScreening): the txid, the vault_ref, and every account the
// adapter has seen on this txid (holds and postings). A frozen account is
// NG ACCOUNT_FROZEN. The list is local on purpose: screening must answer
// during the core's batch window. Every decision is audited.
func (a *Adapter) AuthorityCheck(ctx context.Context, req bankapi.AuthorityCheckRequest) (bankapi.CheckResponse, error) {
	if err := a.validate(&req); err != nil {
		return bankapi.CheckResponse{}, err
	}
	return once(ctx, a, string(bankapi.AuthorityCheck), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.CheckResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.CheckResponse{}, err
		}
		var hit, frozen int
		err := tx.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM AdapterScreening s WHERE
				(s.entry_type = 'TXID' AND s.value = ?1) OR
				(s.entry_type = 'VAULT_REF' AND ?2 <> '' AND s.value = ?2) OR
				(s.entry_type = 'ACCOUNT' AND s.value IN (
					SELECT account_hash FROM AdapterHolds WHERE txid = ?1
					UNION SELECT account_hash FROM AdapterPostings WHERE txid = ?1))),
			(SELECT COUNT(*) FROM AdapterAccounts WHERE status = 'FROZEN' AND account_hash IN (
					SELECT account_hash FROM AdapterHolds WHERE txid = ?1
					UNION SELECT account_hash FROM AdapterPostings WHERE txid = ?1))`,
			req.TxID, req.VaultRef).Scan(&hit, &frozen)
		if err != nil {
			return bankapi.CheckResponse{}, fmt.Errorf("adapter: screen %s: %w", req.TxID, err)
		}
		resp := bankapi.CheckResponse{Result: bankapi.ResultOK}
		switch {
		case hit > 0:
			resp = bankapi.CheckResponse{Result: bankapi.ResultNG, ReasonCode: bankapi.ReasonSanctionsMatch}
		case frozen > 0:
			resp = bankapi.CheckResponse{Result: bankapi.ResultNG, ReasonCode: bankapi.ReasonAccountFrozen}
		}
		payload, _ := json.Marshal(map[string]any{"check_type": req.CheckType, "result": resp.Result, "reason_code": resp.ReasonCode})
		if err := a.audit(ctx, tx, "AUTHORITY_CHECK", req.TxID, req.RequestIDValue, string(payload)); err != nil {
			return bankapi.CheckResponse{}, err
		}
		a.log.InfoContext(ctx, "adapter.authority_check", "txid", req.TxID, "check_type", req.CheckType, "result", resp.Result,
			"reason_code", resp.ReasonCode)
		return resp, nil
	})
}

// NameCheck confirms the payee name: the core is asked (a name check over
// the core link) whether the holder name registered with the adapter is
// still the account holder's name. For a bank that is not real-time, while the core's batch
// window is open, or when the inquiry gets no answer, it returns DEFERRED:
// it never fails the transfer on the core's availability. DEFERRED is not
// cached (a retry of the same request_id asks again); MATCH and MISMATCH
// are.
func (a *Adapter) NameCheck(ctx context.Context, req bankapi.NameCheckRequest) (bankapi.NameCheckResponse, error) {
	if err := a.validate(&req); err != nil {
		return bankapi.NameCheckResponse{}, err
	}
	return twoPhase(ctx, a, string(bankapi.NameCheck), req.RequestIDValue, req, func(ctx context.Context) (bankapi.NameCheckResponse, bool, error) {
		return a.askNameCheck(ctx, req)
	})
}

// askNameCheck answers a name-check: final is false for DEFERRED (not
// cached). It only reads (the adapter's directory and shadow, a name
// inquiry at the core), so asking again is always safe (RecoverRequests).
func (a *Adapter) askNameCheck(ctx context.Context, req bankapi.NameCheckRequest) (bankapi.NameCheckResponse, bool, error) {
	var s Shadow
	deferred := bankapi.NameCheckResponse{Result: bankapi.ResultDeferred}
	notFound := bankapi.NameCheckResponse{Result: bankapi.ResultMismatch, ReasonCode: bankapi.ReasonAccountNotFound}
	resolved := ""
	lookupErr := a.db.Read(ctx, func(tx *store.Tx) error {
		if err := a.requireBank(ctx, tx); err != nil {
			return err
		}
		hash := req.AccountHash
		if hash == "" {
			var err error
			if resolved, err = resolveAlias(ctx, tx, req.PSPRRef); err != nil || resolved == "" {
				return err
			}
			hash = resolved
		}
		var err error
		s, err = readShadow(ctx, tx, hash)
		return err
	})
	if lookupErr == nil && req.AccountHash == "" && resolved == "" {
		a.log.InfoContext(ctx, "adapter.alias_unknown", "txid", req.TxID, "pspr_ref", req.PSPRRef)
		return notFound, true, nil
	}
	if domainerr.Has(lookupErr, "ACCOUNT_NOT_FOUND") || (lookupErr == nil && s.Lifecycle != LifecycleOpen) {
		return notFound, true, nil
	}
	if lookupErr != nil {
		return bankapi.NameCheckResponse{}, false, lookupErr
	}
	if resolved != "" {
		// Resolving a reference needs only this bank's directory, not the
		// core: answered at once, also outside the core's online hours.
		if s.Status != AccountActive {
			return bankapi.NameCheckResponse{Result: bankapi.ResultMismatch, ReasonCode: bankapi.ReasonAccountFrozen}, true, nil
		}
		a.log.InfoContext(ctx, "adapter.alias_resolved", "txid", req.TxID, "pspr_ref", req.PSPRRef, "account_hash", resolved)
		return bankapi.NameCheckResponse{Result: bankapi.ResultMatch, ResolvedAccountHash: resolved}, true, nil
	}
	if !a.realTime || a.inBatchWindow() || a.inq == nil {
		a.log.InfoContext(ctx, "adapter.name_check_deferred", "txid", req.TxID, "real_time", a.realTime,
			"batch_window", a.inBatchWindow())
		return deferred, false, nil
	}
	ictx, cancel := context.WithTimeout(ctx, a.inqWait)
	defer cancel()
	res, err := a.inq.NameCheck(ictx, s.CoreAccount, s.HolderName)
	if err != nil {
		a.log.WarnContext(ctx, "adapter.name_check_deferred", "txid", req.TxID, "error", err)
		return deferred, false, nil
	}
	switch res {
	case NameMatch:
	case NameNoAccount:
		return bankapi.NameCheckResponse{Result: bankapi.ResultMismatch, ReasonCode: bankapi.ReasonAccountNotFound}, true, nil
	default:
		return bankapi.NameCheckResponse{Result: bankapi.ResultMismatch, ReasonCode: bankapi.ReasonNameMismatch}, true, nil
	}
	return bankapi.NameCheckResponse{Result: bankapi.ResultMatch}, true, nil
}

// AccountVerify answers whether the account exists and how well the given
// name matches the registered holder name: 1.0 (equal after
// normalisation), 0.8 (edit distance 1) or 0.0. It never returns the
// stored name: name_provided echoes the caller's string.
func (a *Adapter) AccountVerify(ctx context.Context, req bankapi.AccountVerifyRequest) (bankapi.AccountVerifyResponse, error) {
	if err := a.validate(&req); err != nil {
		return bankapi.AccountVerifyResponse{}, err
	}
	return once(ctx, a, string(bankapi.AccountVerify), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.AccountVerifyResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.AccountVerifyResponse{}, err
		}
		return a.verifyTx(ctx, tx, req.TargetAccountHash, req.TargetAccountName)
	})
}

func (a *Adapter) verifyTx(ctx context.Context, tx *store.Tx, hash, name string) (bankapi.AccountVerifyResponse, error) {
	var provided *string
	if name != "" {
		provided = &name
	}
	var stored, status, lifecycle string
	err := tx.QueryRowContext(ctx, `SELECT holder_name, status, lifecycle FROM AdapterAccounts WHERE account_hash = ?`, hash).Scan(&stored, &status, &lifecycle)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && lifecycle != LifecycleOpen) {
		// An account being closed or closed takes no credit: to a payer
		// verifying it, it is not there.
		return bankapi.AccountVerifyResponse{Result: bankapi.ResultNotFound, MatchScore: 0, NameProvided: provided}, nil
	}
	if err != nil {
		return bankapi.AccountVerifyResponse{}, fmt.Errorf("adapter: verify %s: %w", hash, err)
	}
	resp := bankapi.AccountVerifyResponse{Result: bankapi.ResultMatched, MatchScore: 1.0, NameProvided: provided,
		FraudWarning: status == AccountFrozen}
	if name != "" {
		resp.MatchScore = MatchScore(name, stored)
		if resp.MatchScore == 0 {
			resp.Result = bankapi.ResultMismatched
		}
	}
	return resp, nil
}

// CreditNotify stores a credit notification for the core to pull exactly
// once (PullNotifications). One notification per txid.
func (a *Adapter) CreditNotify(ctx context.Context, req bankapi.CreditNotifyRequest) (bankapi.NotifyResponse, error) {
	if err := a.validate(&req, req.Amount); err != nil {
		return bankapi.NotifyResponse{}, err
	}
	return once(ctx, a, string(bankapi.CreditNotify), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.NotifyResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.NotifyResponse{}, err
		}
		if err := a.storeNotification(ctx, tx, NotifyCredit, req.TxID, req.PayeeAccountHash, req.Amount.Value, req.RequestIDValue, req); err != nil {
			return bankapi.NotifyResponse{}, err
		}
		return bankapi.NotifyResponse{Result: bankapi.ResultNotified}, nil
	})
}

// RTPNotify stores a request-to-pay notification exactly like CreditNotify
// (one per rtp_id).
func (a *Adapter) RTPNotify(ctx context.Context, req bankapi.RTPNotifyRequest) (bankapi.NotifyResponse, error) {
	if err := a.validate(&req, req.Amount); err != nil {
		return bankapi.NotifyResponse{}, err
	}
	return once(ctx, a, string(bankapi.RTPNotify), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.NotifyResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.NotifyResponse{}, err
		}
		if err := a.storeNotification(ctx, tx, NotifyRTP, req.RTPID, "", req.Amount.Value, req.RequestIDValue, req); err != nil {
			return bankapi.NotifyResponse{}, err
		}
		return bankapi.NotifyResponse{Result: bankapi.ResultNotified}, nil
	})
}

// DebitSettled records the end-to-end settlement of a debit in the audit
// trail (and thereby forbids compensating it). Idempotent.
func (a *Adapter) DebitSettled(ctx context.Context, req bankapi.DebitSettledRequest) (bankapi.DebitSettledResponse, error) {
	if err := a.validate(&req, req.Amount); err != nil {
		return bankapi.DebitSettledResponse{}, err
	}
	return once(ctx, a, string(bankapi.DebitSettled), req.RequestIDValue, req, func(tx *store.Tx) (bankapi.DebitSettledResponse, error) {
		if err := a.requireBank(ctx, tx); err != nil {
			return bankapi.DebitSettledResponse{}, err
		}
		payload, _ := json.Marshal(req)
		if err := a.audit(ctx, tx, "DEBIT_SETTLED", req.TxID, req.RequestIDValue, string(payload)); err != nil {
			return bankapi.DebitSettledResponse{}, err
		}
		a.log.InfoContext(ctx, "adapter.debit_settled", "txid", req.TxID, "amount", req.Amount.Value)
		return bankapi.DebitSettledResponse{Result: bankapi.ResultAcknowledged, TxID: req.TxID}, nil
	})
}

// InitializeBank sets up the bank side of the adapter (ALREADY_INITIALIZED
// when done before). boj_prefund is recorded; the core keeps its own
// internal accounts.
func (a *Adapter) InitializeBank(ctx context.Context, req bankapi.InitializeBankRequest) (bankapi.BankResponse, error) {
	if err := a.validate(&req); err != nil {
		return bankapi.BankResponse{}, err
	}
	run := func(tx *store.Tx) (bankapi.BankResponse, error) {
		res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO AdapterBank (bank_id, status, boj_prefund, initialized_at)
			VALUES (?, 'INITIALIZED', ?, ?)`, a.bank, req.Prefund(), a.now())
		if err != nil {
			return bankapi.BankResponse{}, fmt.Errorf("adapter: initialize bank: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return bankapi.BankResponse{Result: bankapi.ResultAlreadyInitialized, BankID: a.bank}, nil
		}
		if err := a.audit(ctx, tx, "BANK_INITIALIZED", "", req.RequestIDValue, fmt.Sprintf(`{"boj_prefund":%d}`, req.Prefund())); err != nil {
			return bankapi.BankResponse{}, err
		}
		a.log.InfoContext(ctx, "adapter.bank_initialized", "boj_prefund", req.Prefund())
		return bankapi.BankResponse{Result: bankapi.ResultInitialized, BankID: a.bank}, nil
	}
	if req.RequestIDValue != "" {
		return once(ctx, a, string(bankapi.InitializeBank), req.RequestIDValue, req, run)
	}
	var out bankapi.BankResponse
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		var err error
		out, err = run(tx)
		return err
	})
	return out, err
}

// CleanupBank removes the bank's adapter data when the bank leaves. It
// refuses (STATE_GUARD) while money is still in motion — postings not
// APPLIED or WRITTEN_OFF, HELD holds, credits held for approval
// (PENDING), account lifecycle actions the core has not answered
// (PENDING), or OPEN reconciliation drifts —
// because deleting them would lose a posting or a Case. The audit log and
// EntityStateLog are kept.
func (a *Adapter) CleanupBank(ctx context.Context, req bankapi.CleanupBankRequest) (bankapi.BankResponse, error) {
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		var open, held, drifts, approvals, ops int
		err := tx.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM AdapterOutbox WHERE bank = ?1 AND status NOT IN ('APPLIED','WRITTEN_OFF')),
			(SELECT COUNT(*) FROM AdapterHolds WHERE status = 'HELD'),
			(SELECT COUNT(*) FROM AdapterReconDrift WHERE bank_id = ?1 AND status = 'OPEN'),
			(SELECT COUNT(*) FROM AdapterApprovals WHERE status = 'PENDING'),
			(SELECT COUNT(*) FROM AdapterAccountOps WHERE status = 'PENDING')`, a.bank).Scan(&open, &held, &drifts, &approvals, &ops)
		if err != nil {
			return fmt.Errorf("adapter: cleanup check: %w", err)
		}
		if open+held+drifts+approvals+ops > 0 {
			return domainerr.New("STATE_GUARD", "bank still has money in motion; resolve it before cleanup",
				map[string]any{"open_postings": open, "held_reservations": held, "open_drifts": drifts, "pending_approvals": approvals,
					"pending_account_ops": ops})
		}
		for _, q := range []string{
			`DELETE FROM AdapterPostings`,
			`DELETE FROM AdapterOutbox WHERE bank = ?`,
			`DELETE FROM AdapterHolds`,
			`DELETE FROM AdapterNotifications`,
			`DELETE FROM AdapterScreening`,
			`DELETE FROM IdempotencyKeys WHERE key LIKE 'ZCREQ:' || ? || ':%'`,
			`DELETE FROM AdapterReconDrift WHERE bank_id = ?`,
			`DELETE FROM AdapterApprovals`,
			`DELETE FROM AdapterFilters`,
			`DELETE FROM AdapterCustomerAccounts`,
			`DELETE FROM AdapterCustomerTransfers`,
			`DELETE FROM AdapterAliases`,
			`DELETE FROM AdapterAccountOps`,
			`DELETE FROM AdapterAccounts`,
			`DELETE FROM AdapterBank WHERE bank_id = ?`,
		} {
			var args []any
			if containsPlaceholder(q) {
				args = append(args, a.bank)
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("adapter: cleanup: %w", err)
			}
		}
		return a.audit(ctx, tx, "BANK_CLEANED_UP", "", "", "")
	})
	if err != nil {
		return bankapi.BankResponse{}, err
	}
	a.log.InfoContext(ctx, "adapter.bank_cleaned_up")
	return bankapi.BankResponse{Result: bankapi.ResultCleanedUp, BankID: a.bank}, nil
}

func containsPlaceholder(q string) bool {
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			return true
		}
	}
	return false
}
