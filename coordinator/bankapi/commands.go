package bankapi

// Command is the path segment of one ingress endpoint:
// POST /bank/{bank_id}/zc-ingress/{command}.
type Command string

// The 13 ingress commands of spec 004.
const (
	ReserveFunds   Command = "reserve-funds"
	ExecuteDebit   Command = "execute-debit"
	ExecuteCredit  Command = "execute-credit"
	ReleaseReserve Command = "release-reserve"
	LegReadyCheck  Command = "leg-ready-check"
	AuthorityCheck Command = "authority-check"
	NameCheck      Command = "name-check"
	AccountVerify  Command = "account-verify"
	CreditNotify   Command = "credit-notify"
	RTPNotify      Command = "rtp-notify"
	DebitSettled   Command = "debit-settled"
	InitializeBank Command = "initialize-bank"
	CleanupBank    Command = "cleanup-bank"
)

// Compensate is a zcgw extension beside the 13: the payer bank undoes the
// debit of a transfer whose credit failed (the adapter's compensation of
// spec 001 §18.2 #4). None of spec 004's 13 commands carries a reversal,
// and spec 004 names reversals only as a ZC operation (POST
// /api/reversals); the bank side needs a command to receive it
// (docs/adapter.md, "compensate").
const Compensate Command = "compensate"

// Extensions lists the zcgw ingress commands beyond spec 004's 13.
var Extensions = []Command{Compensate}

// Commands names all 13 commands in spec order.
var Commands = []Command{
	ReserveFunds, ExecuteDebit, ExecuteCredit, ReleaseReserve, LegReadyCheck,
	AuthorityCheck, NameCheck, AccountVerify, CreditNotify, RTPNotify,
	DebitSettled, InitializeBank, CleanupBank,
}

// Path is the HTTP path of the command for a bank.
func (c Command) Path(bankID string) string {
	return "/bank/" + bankID + "/zc-ingress/" + string(c)
}

// Valid reports whether c is one of the 13 commands (Extensions are not).
func (c Command) Valid() bool {
	for _, k := range Commands {
		if k == c {
			return true
		}
	}
	return false
}

// Request is implemented by every request body.
type Request interface {
	// Command names the endpoint the body belongs to.
	Command() Command
	// Validate checks the body and returns a domainerr error naming the
	// first offending field.
	Validate() error
	// RequestID is the idempotency key (request_id), possibly empty where
	// the spec makes it optional.
	RequestID() string
}

// NewRequest returns a zero request body for a command, for decoding.
func NewRequest(c Command) (Request, bool) {
	switch c {
	case ReserveFunds:
		return &ReserveFundsRequest{}, true
	case ExecuteDebit:
		return &ExecuteDebitRequest{}, true
	case ExecuteCredit:
		return &ExecuteCreditRequest{}, true
	case ReleaseReserve:
		return &ReleaseReserveRequest{}, true
	case LegReadyCheck:
		return &LegReadyCheckRequest{}, true
	case AuthorityCheck:
		return &AuthorityCheckRequest{}, true
	case NameCheck:
		return &NameCheckRequest{}, true
	case AccountVerify:
		return &AccountVerifyRequest{}, true
	case CreditNotify:
		return &CreditNotifyRequest{}, true
	case RTPNotify:
		return &RTPNotifyRequest{}, true
	case DebitSettled:
		return &DebitSettledRequest{}, true
	case InitializeBank:
		return &InitializeBankRequest{}, true
	case CleanupBank:
		return &CleanupBankRequest{}, true
	case Compensate:
		return &CompensateRequest{}, true
	}
	return nil, false
}
