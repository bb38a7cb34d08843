package bankapi

import (
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/ident"
)

func missing(cmd Command, field string) error {
	return domainerr.New("MISSING_FIELD", fmt.Sprintf("%s: %s is required", cmd, field),
		map[string]any{"command": string(cmd), "field": field})
}

func invalid(cmd Command, field, why string) error {
	return domainerr.New("INVALID_REQUEST", fmt.Sprintf("%s: %s %s", cmd, field, why),
		map[string]any{"command": string(cmd), "field": field})
}

// need refuses a missing field, then a value that is not an identifier of
// the field's kind (identCheck).
func need(cmd Command, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return missing(cmd, pairs[i])
		}
	}
	return identCheck(cmd, pairs...)
}

// fieldKinds maps the identifier fields of the ingress bodies to their
// coordinator/ident kind; any other field named to need/identCheck is a
// free-text or enumerated field checked by its Validate.
var fieldKinds = map[string]ident.Kind{
	"request_id":                   ident.RequestID,
	"txid":                         ident.TxID,
	"account_hash":                 ident.AccountHash,
	"payer_account_hash":           ident.AccountHash,
	"payee_account_hash":           ident.AccountHash,
	"target_account_hash":          ident.AccountHash,
	"payer_bank_id":                ident.BankID,
	"payee_bank_id":                ident.BankID,
	"pspr_ref":                     ident.PSPRRef,
	"vault_ref":                    ident.VaultRef,
	"purpose":                      ident.Purpose,
	"gtid":                         ident.BankRef,
	"leg_id":                       ident.BankRef,
	"rtp_id":                       ident.BankRef,
	"verification_id":              ident.BankRef,
	"reservation_ref":              ident.BankRef,
	"decision_proof_ref":           ident.BankRef,
	"h_reservation.reservation_id": ident.BankRef,
}

// identCheck checks the (field, value) pairs whose field has a kind in
// fieldKinds; empty values pass (presence is need's check).
func identCheck(cmd Command, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		k, ok := fieldKinds[pairs[i]]
		if !ok {
			continue
		}
		if err := ident.Check(k, pairs[i], pairs[i+1]); err != nil {
			de, _ := domainerr.As(err)
			de.Details["command"] = string(cmd)
			de.Message = string(cmd) + ": " + de.Message
			return de
		}
	}
	return nil
}

// ValidateAmount checks an amount at the input boundary: positive, at most
// MaxAmountValue, with a three-letter upper-case currency.
func ValidateAmount(cmd Command, field string, a Amount) error {
	if a.Value <= 0 || a.Value > MaxAmountValue {
		return domainerr.New("INVALID_AMOUNT",
			fmt.Sprintf("%s: %s.value must be in 1..%d, got %d", cmd, field, MaxAmountValue, a.Value),
			map[string]any{"command": string(cmd), "field": field + ".value", "value": a.Value})
	}
	if a.Currency == "" {
		return missing(cmd, field+".currency")
	}
	if !ValidCurrency(a.Currency) {
		return invalid(cmd, field+".currency", fmt.Sprintf("must be an ISO 4217 code, got %q", a.Currency))
	}
	return nil
}

// ValidCurrency reports whether c has the shape of an ISO 4217 alphabetic
// code: three upper-case letters.
func ValidCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := 0; i < len(c); i++ {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

func stamp(cmd Command, field, v string) error {
	if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
		return invalid(cmd, field, fmt.Sprintf("must be RFC3339, got %q", v))
	}
	return nil
}

// Command implementations, RequestID accessors and validation.

func (r *ReserveFundsRequest) Command() Command  { return ReserveFunds }
func (r *ReserveFundsRequest) RequestID() string { return r.RequestIDValue }
func (r *ReserveFundsRequest) Validate() error {
	if err := need(ReserveFunds, "request_id", r.RequestIDValue, "txid", r.TxID, "account_hash", r.AccountHash); err != nil {
		return err
	}
	return ValidateAmount(ReserveFunds, "amount", r.Amount)
}

func (r *ExecuteDebitRequest) Command() Command  { return ExecuteDebit }
func (r *ExecuteDebitRequest) RequestID() string { return r.RequestIDValue }
func (r *ExecuteDebitRequest) Validate() error {
	if err := need(ExecuteDebit, "request_id", r.RequestIDValue, "txid", r.TxID, "decision_proof_ref", r.DecisionProofRef); err != nil {
		return err
	}
	if err := ValidateAmount(ExecuteDebit, "amount", r.Amount); err != nil {
		return err
	}
	resID := ""
	if r.HReservation != nil {
		resID = r.HReservation.ReservationID
	}
	if err := identCheck(ExecuteDebit, "h_reservation.reservation_id", resID, "payer_account_hash", r.PayerAccountHash); err != nil {
		return err
	}
	if r.HReservation == nil || r.HReservation.ReservationID == "" {
		// HIGH_VALUE skips reserve-funds and names the account directly.
		if r.PayerAccountHash == "" {
			return missing(ExecuteDebit, "h_reservation.reservation_id or payer_account_hash")
		}
	}
	if r.ExecutionDeadline != "" {
		return stamp(ExecuteDebit, "execution_deadline", r.ExecutionDeadline)
	}
	return nil
}

func (r *ExecuteCreditRequest) Command() Command  { return ExecuteCredit }
func (r *ExecuteCreditRequest) RequestID() string { return r.RequestIDValue }
func (r *ExecuteCreditRequest) Validate() error {
	if err := need(ExecuteCredit, "request_id", r.RequestIDValue, "txid", r.TxID,
		"decision_proof_ref", r.DecisionProofRef, "payee_account_hash", r.PayeeAccountHash); err != nil {
		return err
	}
	if err := CheckEDI("edi_ref", r.EdiRef); err != nil {
		return err
	}
	return ValidateAmount(ExecuteCredit, "amount", r.Amount)
}

func (r *ReleaseReserveRequest) Command() Command  { return ReleaseReserve }
func (r *ReleaseReserveRequest) RequestID() string { return r.RequestIDValue }
func (r *ReleaseReserveRequest) Validate() error {
	return need(ReleaseReserve, "request_id", r.RequestIDValue, "txid", r.TxID, "reservation_ref", r.ReservationRef)
}

func (r *LegReadyCheckRequest) Command() Command  { return LegReadyCheck }
func (r *LegReadyCheckRequest) RequestID() string { return r.RequestIDValue }
func (r *LegReadyCheckRequest) Validate() error {
	if err := need(LegReadyCheck, "request_id", r.RequestIDValue, "gtid", r.GTID, "leg_id", r.LegID,
		"role", r.Role, "account_hash", r.AccountHash); err != nil {
		return err
	}
	if r.Role != RolePayer && r.Role != RolePayee {
		return invalid(LegReadyCheck, "role", fmt.Sprintf("must be PAYER or PAYEE, got %q", r.Role))
	}
	return ValidateAmount(LegReadyCheck, "amount", r.Amount)
}

func (r *AuthorityCheckRequest) Command() Command  { return AuthorityCheck }
func (r *AuthorityCheckRequest) RequestID() string { return r.RequestIDValue }
func (r *AuthorityCheckRequest) Validate() error {
	if err := need(AuthorityCheck, "request_id", r.RequestIDValue, "txid", r.TxID, "check_type", r.CheckType); err != nil {
		return err
	}
	if err := identCheck(AuthorityCheck, "vault_ref", r.VaultRef); err != nil {
		return err
	}
	if r.CheckType != CheckInitial && r.CheckType != CheckRecheck {
		return invalid(AuthorityCheck, "check_type", fmt.Sprintf("must be INITIAL or RECHECK, got %q", r.CheckType))
	}
	return nil
}

func (r *NameCheckRequest) Command() Command  { return NameCheck }
func (r *NameCheckRequest) RequestID() string { return r.RequestIDValue }
func (r *NameCheckRequest) Validate() error {
	if err := need(NameCheck, "request_id", r.RequestIDValue, "txid", r.TxID); err != nil {
		return err
	}
	if err := identCheck(NameCheck, "pspr_ref", r.PSPRRef, "account_hash", r.AccountHash); err != nil {
		return err
	}
	if r.AccountHash == "" && r.PSPRRef == "" {
		return domainerr.New("MISSING_FIELD", "name-check: account_hash is required (or pspr_ref, to have the payee bank resolve the account)",
			map[string]any{"command": string(NameCheck), "field": "account_hash"})
	}
	return nil
}

func (r *AccountVerifyRequest) Command() Command  { return AccountVerify }
func (r *AccountVerifyRequest) RequestID() string { return r.RequestIDValue }
func (r *AccountVerifyRequest) Validate() error {
	return need(AccountVerify, "request_id", r.RequestIDValue, "verification_id", r.VerificationID,
		"target_account_hash", r.TargetAccountHash)
}

func (r *CreditNotifyRequest) Command() Command  { return CreditNotify }
func (r *CreditNotifyRequest) RequestID() string { return r.RequestIDValue }
func (r *CreditNotifyRequest) Validate() error {
	if err := need(CreditNotify, "request_id", r.RequestIDValue, "txid", r.TxID,
		"payee_account_hash", r.PayeeAccountHash, "payer_bank_id", r.PayerBankID); err != nil {
		return err
	}
	if err := identCheck(CreditNotify, "purpose", r.Purpose); err != nil {
		return err
	}
	return ValidateAmount(CreditNotify, "amount", r.Amount)
}

func (r *RTPNotifyRequest) Command() Command  { return RTPNotify }
func (r *RTPNotifyRequest) RequestID() string { return r.RequestIDValue }
func (r *RTPNotifyRequest) Validate() error {
	if err := need(RTPNotify, "request_id", r.RequestIDValue, "rtp_id", r.RTPID, "payee_bank_id", r.PayeeBankID,
		"payer_bank_id", r.PayerBankID, "expires_at", r.ExpiresAt, "payee_name", r.PayeeName); err != nil {
		return err
	}
	if err := ValidateAmount(RTPNotify, "amount", r.Amount); err != nil {
		return err
	}
	return stamp(RTPNotify, "expires_at", r.ExpiresAt)
}

func (r *DebitSettledRequest) Command() Command  { return DebitSettled }
func (r *DebitSettledRequest) RequestID() string { return r.RequestIDValue }
func (r *DebitSettledRequest) Validate() error {
	if err := need(DebitSettled, "request_id", r.RequestIDValue, "txid", r.TxID,
		"payee_bank_id", r.PayeeBankID, "settled_at", r.SettledAt); err != nil {
		return err
	}
	if err := ValidateAmount(DebitSettled, "amount", r.Amount); err != nil {
		return err
	}
	return stamp(DebitSettled, "settled_at", r.SettledAt)
}

func (r *CompensateRequest) Command() Command  { return Compensate }
func (r *CompensateRequest) RequestID() string { return r.RequestIDValue }
func (r *CompensateRequest) Validate() error {
	return need(Compensate, "request_id", r.RequestIDValue, "txid", r.TxID)
}

func (r *InitializeBankRequest) Command() Command  { return InitializeBank }
func (r *InitializeBankRequest) RequestID() string { return r.RequestIDValue }
func (r *InitializeBankRequest) Validate() error {
	if err := identCheck(InitializeBank, "request_id", r.RequestIDValue); err != nil {
		return err
	}
	if r.BOJPrefund != nil && (*r.BOJPrefund < 0 || *r.BOJPrefund > MaxAmountValue) {
		return domainerr.New("INVALID_AMOUNT",
			fmt.Sprintf("initialize-bank: boj_prefund must be in 0..%d, got %d", MaxAmountValue, *r.BOJPrefund),
			map[string]any{"command": string(InitializeBank), "field": "boj_prefund"})
	}
	return nil
}

// Prefund is boj_prefund or its default.
func (r *InitializeBankRequest) Prefund() int64 {
	if r.BOJPrefund == nil {
		return DefaultBOJPrefund
	}
	return *r.BOJPrefund
}

func (r *CleanupBankRequest) Command() Command  { return CleanupBank }
func (r *CleanupBankRequest) RequestID() string { return "" }
func (r *CleanupBankRequest) Validate() error   { return nil }
