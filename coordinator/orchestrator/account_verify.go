package orchestrator

import (
	"context"
	"database/sql"
	"errors"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// Account verification (spec 004 account-verify; POST /api/account-verify):
// a participant asks, before it sends a transfer, whether an account
// exists at the payee bank and how well a name matches its holder. ZC
// takes target_account_id / name_to_verify and maps them at the boundary
// to the bank's target_account_hash / target_account_name
// (bankapi.AccountVerifyRequest, the one declaration both ends use), sends
// account-verify through the Banks port and records the answer in
// AccountVerifications. The holder's stored name never comes back.

// AccountVerifyRequest is the body of POST /api/account-verify. The
// target account is named as ZC names accounts (its account hash).
type AccountVerifyRequest struct {
	TargetBankID    string `json:"target_bank_id"`
	TargetAccountID string `json:"target_account_id"`
	NameToVerify    string `json:"name_to_verify,omitempty"`
}

// AccountVerification is an AccountVerifications row.
type AccountVerification struct {
	VerificationID  string  `json:"verification_id"`
	RequesterBankID string  `json:"requester_bank_id"`
	TargetBankID    string  `json:"target_bank_id"`
	TargetAccountID string  `json:"target_account_id"`
	NameProvided    *string `json:"name_provided"`
	Result          string  `json:"result"` // MATCHED | MISMATCHED | NOT_FOUND
	MatchScore      float64 `json:"match_score"`
	FraudWarning    bool    `json:"fraud_warning"`
	CreatedAt       string  `json:"created_at"`
}

// VerifyAccount asks the target bank and records its answer. requester is
// the asking participant's bank id ("OPS" for the operator). Refusals:
// MISSING_FIELD, PARTICIPANT_NOT_FOUND (unknown or inactive target bank),
// the bank call's error (BANK_ERROR / BANK_TIMEOUT, retryable: nothing is
// recorded), and a bank answer outside the spec's result set
// (BANK_ERROR).
func (o *Orchestrator) VerifyAccount(ctx context.Context, requester string, req AccountVerifyRequest) (AccountVerification, error) {
	for _, f := range []struct{ name, v string }{{"target_bank_id", req.TargetBankID}, {"target_account_id", req.TargetAccountID}} {
		if f.v == "" {
			return AccountVerification{}, domainerr.New("MISSING_FIELD", f.name+" is required", map[string]any{"field": f.name})
		}
	}
	p, err := o.participant(ctx, req.TargetBankID)
	if err != nil {
		return AccountVerification{}, err
	}
	if !p.IsActive {
		return AccountVerification{}, domainerr.New("PARTICIPANT_NOT_FOUND", "the target bank is not an active participant",
			map[string]any{"bank_id": req.TargetBankID})
	}
	if o.banks == nil {
		return AccountVerification{}, domainerr.New("BANK_ERROR", "no bank client is configured", nil)
	}
	id := "V-" + uuid.New()
	breq := &bankapi.AccountVerifyRequest{RequestIDValue: uuid.New(), VerificationID: id,
		TargetAccountHash: req.TargetAccountID, TargetAccountName: req.NameToVerify}
	var resp bankapi.AccountVerifyResponse
	if err := o.banks.Call(ctx, req.TargetBankID, breq, &resp); err != nil {
		return AccountVerification{}, err
	}
	switch resp.Result {
	case bankapi.ResultMatched, bankapi.ResultMismatched, bankapi.ResultNotFound:
	default:
		return AccountVerification{}, domainerr.New("BANK_ERROR", "account-verify answered "+resp.Result,
			map[string]any{"bank_id": req.TargetBankID, "verification_id": id})
	}
	out := AccountVerification{VerificationID: id, RequesterBankID: requester, TargetBankID: req.TargetBankID,
		TargetAccountID: req.TargetAccountID, Result: resp.Result, MatchScore: resp.MatchScore, FraudWarning: resp.FraudWarning,
		CreatedAt: clock.Stamp(o.clk.Now())}
	if req.NameToVerify != "" {
		name := req.NameToVerify
		out.NameProvided = &name
	}
	fraud := 0
	if resp.FraudWarning {
		fraud = 1
	}
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		_, err := store.Insert(ctx, tx, "AccountVerifications",
			[]string{"verification_id", "requester_bank_id", "target_bank_id", "target_account_hash", "name_provided", "result",
				"match_score", "fraud_warning", "request_id", "created_at"},
			id, requester, req.TargetBankID, req.TargetAccountID, nullStr(req.NameToVerify), resp.Result, resp.MatchScore, fraud,
			breq.RequestIDValue, out.CreatedAt)
		return wrapDB("insert account verification", err)
	})
	if err != nil {
		return AccountVerification{}, err
	}
	o.log.InfoContext(ctx, "orchestrator.account_verified", "verification_id", id, "requester", requester,
		"target_bank_id", req.TargetBankID, "result", resp.Result, "match_score", resp.MatchScore)
	return out, nil
}

// AccountVerificationByID reads one verification; a requester other than
// the one that asked ("" for the operator: any) gets NOT_FOUND, as for a
// missing one.
func (o *Orchestrator) AccountVerificationByID(ctx context.Context, requester, id string) (AccountVerification, error) {
	var v AccountVerification
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		var name sql.NullString
		var fraud int
		err := tx.QueryRowContext(ctx, `SELECT verification_id, requester_bank_id, target_bank_id, target_account_hash, name_provided,
			result, match_score, fraud_warning, created_at FROM AccountVerifications WHERE verification_id = ?`, id).
			Scan(&v.VerificationID, &v.RequesterBankID, &v.TargetBankID, &v.TargetAccountID, &name, &v.Result, &v.MatchScore, &fraud, &v.CreatedAt)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && requester != "" && requester != v.RequesterBankID) {
			return AccountVerificationNotFound(id)
		}
		if err != nil {
			return wrapDB("read account verification", err)
		}
		if name.Valid {
			v.NameProvided = &name.String
		}
		v.FraudWarning = fraud == 1
		return nil
	})
	return v, err
}

// CleanupBank is the coordinator's side of a participant leaving (spec 004
// cleanup-bank): once the operator has made the participant inactive and
// no transfer of it is still moving (every one SETTLED, CANCELLED or
// FAILED_EXECUTION, and no refund REQUESTED), ZC sends cleanup-bank to its
// bank, which deletes its bank-side data (the adapter refuses, STATE_GUARD,
// while its own postings, holds, held credits or drifts are open). ZC's own
// rows (Participants, the transfers and their chains) are kept: they are
// the record. Refusals: PARTICIPANT_NOT_FOUND, STATE_GUARD (still active,
// or transfers in motion), the bank's refusal or transport error.
func (o *Orchestrator) CleanupBank(ctx context.Context, bankID, requestedBy string) (bankapi.BankResponse, error) {
	if requestedBy == "" {
		return bankapi.BankResponse{}, domainerr.New("MISSING_FIELD", "requested_by is required", map[string]any{"field": "requested_by"})
	}
	p, err := o.participant(ctx, bankID)
	if err != nil {
		return bankapi.BankResponse{}, err
	}
	if p.IsActive {
		return bankapi.BankResponse{}, domainerr.New("STATE_GUARD", "deactivate the participant (is_active false) before its cleanup",
			map[string]any{"bank_id": bankID})
	}
	var moving, refunds int
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM Transactions WHERE (payer_bank_id = ?1 OR payee_bank_id = ?1)
				AND state NOT IN ('SETTLED', 'CANCELLED', 'FAILED_EXECUTION')),
			(SELECT COUNT(*) FROM ReversalRecords WHERE payer_bank_id = ?1 AND status = 'REQUESTED')`, bankID).Scan(&moving, &refunds)
	})
	if err != nil {
		return bankapi.BankResponse{}, wrapDB("count open transfers", err)
	}
	if moving+refunds > 0 {
		return bankapi.BankResponse{}, domainerr.New("STATE_GUARD", "the participant still has transfers in motion",
			map[string]any{"bank_id": bankID, "open_transfers": moving, "open_refunds": refunds})
	}
	if o.banks == nil {
		return bankapi.BankResponse{}, domainerr.New("BANK_ERROR", "no bank client is configured", nil)
	}
	var resp bankapi.BankResponse
	if err := o.banks.Call(ctx, bankID, &bankapi.CleanupBankRequest{}, &resp); err != nil {
		return bankapi.BankResponse{}, err
	}
	if resp.Result != bankapi.ResultCleanedUp {
		return bankapi.BankResponse{}, domainerr.New("BANK_ERROR", "cleanup-bank answered "+resp.Result, map[string]any{"bank_id": bankID})
	}
	o.log.InfoContext(ctx, "orchestrator.bank_cleaned_up", "bank_id", bankID, "requested_by", requestedBy)
	return resp, nil
}

// AccountVerificationNotFound is the one body for an unknown
// verification_id (and, at the gateway, for one another bank asked for).
func AccountVerificationNotFound(id string) error {
	return domainerr.New("NOT_FOUND", "no such verification", map[string]any{"verification_id": id})
}
