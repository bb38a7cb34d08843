package bankapi

import "github.com/zcgw/zcgw/coordinator/domainerr"

// MaxAmountValue is the input-boundary safety net on amount.value (spec
// 004: 1 trillion minor units); larger values are INVALID_AMOUNT.
const MaxAmountValue int64 = 1_000_000_000_000

// Amount is a money amount in minor units with its ISO 4217 currency.
type Amount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency"`
}

// Proof types used by the bank ingress (spec 004 SettlementProofRef).
const (
	ProofPayerExec = "PAYER_EXEC_PROOF"
	ProofPayeeExec = "PAYEE_EXEC_PROOF"
	// ProofPayerHVIsolation is the payer bank's proof, for a HIGH_VALUE
	// transfer, that the debited funds are isolated for the RTGS leg; the
	// coordinator instructs external settlement only after it (002 §12.3).
	ProofPayerHVIsolation = "PAYER_HV_ISOLATION_PROOF"
)

// LaneHighValue is the lane value of a HIGH_VALUE execute-debit.
const LaneHighValue = "HIGH_VALUE"

// VenueBankLedger is the default venue of a bank's own proof.
const VenueBankLedger = "BANK_LEDGER"

// CustodyDetail is set on execute-credit when the credit went to custody
// instead of the payee account.
type CustodyDetail struct {
	IsCustody         bool   `json:"is_custody"`
	ReasonCode        string `json:"reason_code"`
	CustodyAccountRef string `json:"custody_account_ref"`
}

// BankProofRef (alias SettlementProofRef) is the bank's proof of execution.
type BankProofRef struct {
	IssuerBankID  string         `json:"issuer_bank_id"`
	ProofType     string         `json:"proof_type"`
	ProofID       string         `json:"proof_id"`
	RecordedAt    string         `json:"recorded_at"`
	CustodyDetail *CustodyDetail `json:"custody_detail"`
	Venue         string         `json:"venue,omitempty"`
	ExternalRef   *string        `json:"external_ref,omitempty"`
	SignerKeyID   *string        `json:"signer_key_id,omitempty"`
	VerifiedAt    *string        `json:"verified_at,omitempty"`
}

// Result values used in response bodies.
const (
	ResultReserved           = "RESERVED"
	ResultError              = "ERROR"
	ResultOK                 = "OK"
	ResultNG                 = "NG"
	ResultReleased           = "RELEASED"
	ResultMatch              = "MATCH"
	ResultMismatch           = "MISMATCH"
	ResultDeferred           = "DEFERRED"
	ResultMatched            = "MATCHED"
	ResultMismatched         = "MISMATCHED"
	ResultNotFound           = "NOT_FOUND"
	ResultNotified           = "NOTIFIED"
	ResultAcknowledged       = "ACKNOWLEDGED"
	ResultInitialized        = "INITIALIZED"
	ResultAlreadyInitialized = "ALREADY_INITIALIZED"
	ResultCleanedUp          = "CLEANED_UP"
	ResultReversed           = "REVERSED" // compensate
)

// Response-body reason codes (values of "reason_code" in an NG/ERROR body,
// not DomainErrors).
const (
	ReasonInsufficientFunds = "INSUFFICIENT_FUNDS"
	ReasonSanctionsMatch    = "SANCTIONS_MATCH"
	ReasonNameMismatch      = "NAME_MISMATCH"
	ReasonAccountNotFound   = "ACCOUNT_NOT_FOUND"
	ReasonAccountFrozen     = "ACCOUNT_FROZEN"
)

// ---- reserve-funds

// ReserveFundsRequest asks the payer bank for an H_RESERVED hold.
type ReserveFundsRequest struct {
	RequestIDValue string `json:"request_id"`
	TxID           string `json:"txid"`
	Amount         Amount `json:"amount"`
	AccountHash    string `json:"account_hash"`
}

// ReserveFundsResponse is RESERVED with a reservation_ref, or ERROR with a
// reason_code.
type ReserveFundsResponse struct {
	Result         string `json:"result"`
	ReservationRef string `json:"reservation_ref,omitempty"`
	ReasonCode     string `json:"reason_code,omitempty"`
}

// ---- execute-debit

// HReservation names the hold an execute-debit consumes.
type HReservation struct {
	ReservationID string `json:"reservation_id"`
	Mode          string `json:"mode"`
}

// ExecuteDebitRequest instructs the payer bank to debit (PayerExecRequested).
// HIGH_VALUE has no reservation and names payer_account_hash directly.
type ExecuteDebitRequest struct {
	RequestIDValue    string        `json:"request_id"`
	TxID              string        `json:"txid"`
	Amount            Amount        `json:"amount"`
	DecisionProofRef  string        `json:"decision_proof_ref"`
	HReservation      *HReservation `json:"h_reservation,omitempty"`
	ExecutionDeadline string        `json:"execution_deadline,omitempty"`
	Lane              string        `json:"lane,omitempty"`
	PayerAccountHash  string        `json:"payer_account_hash,omitempty"`
}

// ExecuteResponse answers execute-debit and execute-credit.
type ExecuteResponse struct {
	Result       string       `json:"result"`
	BankProofRef BankProofRef `json:"bank_proof_ref"`
	// ApprovalID names the bank's approval request when execute-credit
	// answers HELD (an incoming-transfer filter holds the credit until the
	// payee or a teller decides; docs/bank-api.md).
	ApprovalID string `json:"approval_id,omitempty"`
}

// ---- execute-credit

// ExecuteCreditRequest instructs the payee bank to credit (PayeeExecRequested).
type ExecuteCreditRequest struct {
	RequestIDValue   string `json:"request_id"`
	TxID             string `json:"txid"`
	Amount           Amount `json:"amount"`
	DecisionProofRef string `json:"decision_proof_ref"`
	PayeeAccountHash string `json:"payee_account_hash"`
	Lane             string `json:"lane,omitempty"`
	// PayerBankID and PayerAccountHash name the sender for the payee
	// bank's incoming-transfer filters (SENDER_BLOCK, SENDER_BANK_BLOCK);
	// additive and optional (n/n-1).
	PayerBankID      string `json:"payer_bank_id,omitempty"`
	PayerAccountHash string `json:"payer_account_hash,omitempty"`
	// EdiRef is the transfer's remittance information (PaymentInitiated
	// edi_ref: the 全銀 EDI情報 of a file-drop record, or what the payer's
	// bank sent), for the payee bank's EDI_PATTERN filters; additive and
	// optional (n/n-1). CheckEDI bounds it.
	EdiRef string `json:"edi_ref,omitempty"`
}

// ---- release-reserve

// ReleaseReserveRequest releases an H_RESERVED hold.
type ReleaseReserveRequest struct {
	RequestIDValue string `json:"request_id"`
	TxID           string `json:"txid"`
	ReservationRef string `json:"reservation_ref"`
}

// ReleaseReserveResponse is RELEASED.
type ReleaseReserveResponse struct {
	Result         string `json:"result"`
	ReservationRef string `json:"reservation_ref"`
}

// ---- leg-ready-check

// Leg roles.
const (
	RolePayer = "PAYER"
	RolePayee = "PAYEE"
)

// LegTxID is the txid of a GTID PAYER leg: the payer bank keeps the hold
// its leg-ready-check places under this txid, and the coordinator
// materialises the leg's transfer under the same txid, so the transfer's
// execute-debit consumes that hold. It is "{gtid}.{leg_id}" (a valid txid
// when both are Token identifiers and it fits 32 bytes; the coordinator
// refuses a GTID whose leg ids make it longer).
func LegTxID(gtid, legID string) string { return gtid + "." + legID }

// LegReservationRef is the reservation_ref of a GTID PAYER leg's hold.
func LegReservationRef(gtid, legID string) string { return "LEG-" + LegTxID(gtid, legID) }

// LegReadyCheckRequest asks whether a GTID leg is ready.
type LegReadyCheckRequest struct {
	RequestIDValue string `json:"request_id"`
	GTID           string `json:"gtid"`
	LegID          string `json:"leg_id"`
	Role           string `json:"role"`
	Amount         Amount `json:"amount"`
	AccountHash    string `json:"account_hash"`
}

// CheckResponse is OK or NG with a reason_code (leg-ready-check,
// authority-check).
type CheckResponse struct {
	Result     string `json:"result"`
	ReasonCode string `json:"reason_code,omitempty"`
}

// ---- authority-check

// Authority check types.
const (
	CheckInitial = "INITIAL"
	CheckRecheck = "RECHECK"
)

// AuthorityCheckRequest asks for AML/sanctions screening of a transfer.
type AuthorityCheckRequest struct {
	RequestIDValue string `json:"request_id"`
	TxID           string `json:"txid"`
	CheckType      string `json:"check_type"`
	VaultRef       string `json:"vault_ref,omitempty"`
}

// ---- name-check

// NameCheckRequest asks the payee bank to confirm the account holder name.
// An EXPRESS transfer sent without payee.account_hash (spec 001 §13.1: the
// payee bank resolves it from pspr_ref) sends pspr_ref alone: the bank
// resolves the reference to one of its accounts.
type NameCheckRequest struct {
	RequestIDValue string `json:"request_id"`
	TxID           string `json:"txid"`
	PSPRRef        string `json:"pspr_ref,omitempty"`
	AccountHash    string `json:"account_hash,omitempty"`
}

// NameCheckResponse is MATCH, MISMATCH (with reason_code) or DEFERRED. A
// MATCH of a request without account_hash carries the account the
// pspr_ref resolved to (resolved_account_hash; an extension of spec 004's
// response, written down in docs/adapter.md).
type NameCheckResponse struct {
	Result              string `json:"result"`
	ReasonCode          string `json:"reason_code,omitempty"`
	ResolvedAccountHash string `json:"resolved_account_hash,omitempty"`
}

// ---- account-verify

// AccountVerifyRequest asks whether an account exists and, when a name is
// given, how well it matches. This is the one declaration both the ZC
// caller and the bank receiver use (spec 004).
type AccountVerifyRequest struct {
	RequestIDValue    string `json:"request_id"`
	VerificationID    string `json:"verification_id"`
	TargetAccountHash string `json:"target_account_hash"`
	TargetAccountName string `json:"target_account_name,omitempty"`
}

// AccountVerifyResponse never carries the stored name: name_provided
// echoes the caller's string (or null).
type AccountVerifyResponse struct {
	Result       string  `json:"result"`
	MatchScore   float64 `json:"match_score"`
	NameProvided *string `json:"name_provided"`
	FraudWarning bool    `json:"fraud_warning"`
}

// ---- credit-notify

// CreditNotifyRequest notifies the payee bank of a completed credit.
type CreditNotifyRequest struct {
	RequestIDValue   string `json:"request_id"`
	TxID             string `json:"txid"`
	PayeeAccountHash string `json:"payee_account_hash"`
	Amount           Amount `json:"amount"`
	PayerBankID      string `json:"payer_bank_id"`
	PayerNameMasked  string `json:"payer_name_masked,omitempty"`
	Purpose          string `json:"purpose,omitempty"`
}

// NotifyResponse is NOTIFIED (credit-notify, rtp-notify).
type NotifyResponse struct {
	Result string `json:"result"`
}

// ---- rtp-notify

// RTPNotifyRequest notifies the payer bank of a request-to-pay.
type RTPNotifyRequest struct {
	RequestIDValue string `json:"request_id"`
	RTPID          string `json:"rtp_id"`
	PayeeBankID    string `json:"payee_bank_id"`
	PayerBankID    string `json:"payer_bank_id"`
	Amount         Amount `json:"amount"`
	ExpiresAt      string `json:"expires_at"`
	PayeeName      string `json:"payee_name"`
	Description    string `json:"description,omitempty"`
}

// ---- debit-settled

// DebitSettledRequest tells the payer bank the transfer settled end to end.
type DebitSettledRequest struct {
	RequestIDValue string `json:"request_id"`
	TxID           string `json:"txid"`
	Amount         Amount `json:"amount"`
	PayeeBankID    string `json:"payee_bank_id"`
	SettledAt      string `json:"settled_at"`
}

// DebitSettledResponse is ACKNOWLEDGED with the txid.
type DebitSettledResponse struct {
	Result string `json:"result"`
	TxID   string `json:"txid"`
}

// ---- compensate (zcgw extension, see Compensate)

// CompensateRequest asks the payer bank to undo every debit of txid that
// is not yet reversed (a REVERSAL posting per debit, queued through the
// outbox). reason is the state reason code the coordinator decided on.
type CompensateRequest struct {
	RequestIDValue string `json:"request_id"`
	TxID           string `json:"txid"`
	Reason         string `json:"reason"`
}

// CompensateResponse is REVERSED with the refs of the REVERSAL postings.
type CompensateResponse struct {
	Result    string   `json:"result"` // "REVERSED"
	TxID      string   `json:"txid"`
	Reversals []string `json:"reversals"`
}

// ---- initialize-bank

// DefaultBOJPrefund is the prefund used when boj_prefund is omitted
// (100 billion yen).
const DefaultBOJPrefund int64 = 100_000_000_000

// InitializeBankRequest sets up the bank side. request_id is optional.
type InitializeBankRequest struct {
	RequestIDValue string `json:"request_id,omitempty"`
	BOJPrefund     *int64 `json:"boj_prefund,omitempty"`
}

// BankResponse answers initialize-bank and cleanup-bank.
type BankResponse struct {
	Result string `json:"result"`
	BankID string `json:"bank_id"`
}

// ---- cleanup-bank

// CleanupBankRequest has no body.
type CleanupBankRequest struct{}

// ErrorBody is the catalog JSON shape of every error response (spec 004):
// domainerr.Body, the one declaration of it (the gateway's OpenAPI
// document has one error component).
type ErrorBody = domainerr.Body
