package bankapi

// The bank-to-ZC side of a held credit (spec 004 着金フィルタ and
// POST /internal/transfers/:txid/resume-credit): an incoming-transfer filter
// of the payee bank answers execute-credit with HELD and an approval_id;
// when the payee (HOLD_CONFIRM) or a teller (HOLD_MANUAL) decides, the bank
// tells ZC with ResumeCreditRequest. Both ends import these declarations
// (the adapter sends, the gateway and the orchestrator receive).

// ResultHeld is execute-credit's answer while a filter holds the credit
// (ExecuteResponse.ApprovalID names the approval request).
const ResultHeld = "HELD"

// Resume-credit outcomes (ResumeCreditResponse.Result).
const (
	// ResultResumed: approved; ZC sends execute-credit again and settles.
	ResultResumed = "RESUMED"
	// ResultRejected: refused by the payee side; the transfer ended in
	// FAILED_EXECUTION and the payer is refunded through the reversal path.
	ResultRejected = "REJECTED"
)

// ResumeCreditRequest is the body of POST
// /internal/transfers/{txid}/resume-credit.
type ResumeCreditRequest struct {
	// BankID is the payee bank deciding (it must be the transfer's payee).
	BankID string `json:"bank_id"`
	// ApprovalID is the bank's approval request (ExecuteResponse.ApprovalID).
	ApprovalID string `json:"approval_id"`
	// Approved is the decision.
	Approved bool `json:"approved"`
	// DecidedBy names who decided (customer or teller id, as the bank
	// records it).
	DecidedBy string `json:"decided_by"`
}

// ResumeCreditResponse answers resume-credit: the outcome and the
// transfer's state after it. Replayed is true when the decision had been
// applied before (the same answer again).
type ResumeCreditResponse struct {
	TxID     string `json:"txid"`
	Result   string `json:"result"`
	State    string `json:"state"`
	Replayed bool   `json:"replayed"`
}
