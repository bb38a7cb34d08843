package corelink

import (
	"context"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/uuid"
	"github.com/zcgw/zcgw/formats/coremsg"
	"github.com/zcgw/zcgw/outbox"
)

// parseAccount parses a core account key (formats/coreacct) and refuses a
// malformed one as INVALID_REQUEST on the field "account".
func parseAccount(s string) (coreacct.Key, error) {
	k, err := coreacct.Parse(s)
	if err != nil {
		return coreacct.Key{}, domainerr.New("INVALID_REQUEST", "corelink: "+err.Error(), map[string]any{"field": "account"})
	}
	return k, nil
}

// call encodes body, does one round trip and decodes the reply, checking
// that it answers this request. txid may be empty.
func (l *Link) call(ctx context.Context, op, txid string, body coremsg.Body) (*coremsg.Message, error) {
	reqID := uuid.New()
	raw, err := coremsg.Encode(&coremsg.Message{Header: coremsg.Header{RequestID: reqID, TxID: txid,
		BankCode: l.cfg.Bank, Timestamp: coremsg.FormatTimestamp(l.clk.Now())}, Body: body}, l.cs)
	if err != nil {
		return nil, &encodeError{err: err}
	}
	rb, err := l.roundTrip(ctx, op, raw)
	if err != nil {
		return nil, err
	}
	return l.decodeReply(op, rb, body.MsgType()[:3]+"R", reqID)
}

// decodeReply decodes a reply body and checks that it is a want answering
// the request reqID.
func (l *Link) decodeReply(op string, rb []byte, want, reqID string) (*coremsg.Message, error) {
	reply, err := coremsg.Decode(rb, l.cs)
	if err != nil {
		return nil, &badReplyError{err: fmt.Errorf("corelink %s: undecodable %s reply: %w", l.cfg.Bank, op, err)}
	}
	if reply.Header.MsgType != want || reply.Header.RequestID != reqID {
		return nil, &badReplyError{err: fmt.Errorf("corelink %s: %s reply is %s for request %s, want %s for %s",
			l.cfg.Bank, op, reply.Header.MsgType, reply.Header.RequestID, want, reqID)}
	}
	return reply, nil
}

// encodeError: the request could not be encoded; nothing was sent.
type encodeError struct{ err error }

func (e *encodeError) Error() string { return e.err.Error() }
func (e *encodeError) Unwrap() error { return e.err }

// badReplyError: a reply arrived but cannot be trusted.
type badReplyError struct{ err error }

func (e *badReplyError) Error() string { return e.err.Error() }
func (e *badReplyError) Unwrap() error { return e.err }

// DomainReason maps a core reason code (8 bytes, coremsg Reason) to the
// spec-004 reason code the adapter and the Cases use.
func DomainReason(core string) string {
	switch strings.TrimSpace(core) {
	case "NSF":
		return "INSUFFICIENT_FUNDS"
	case "NOACCT":
		return "ACCOUNT_NOT_FOUND"
	case "NOORIG":
		return "TX_NOT_FOUND"
	case "BADAMT":
		return "INVALID_AMOUNT"
	case "BADREQ", "BADBANK":
		return "INVALID_REQUEST"
	case "FROZEN":
		return "ACCOUNT_FROZEN"
	case "CLOSING", "CLOSED", "NOHOLD", "BALNZ", "EXISTS":
		// the account's lifecycle state refuses the action (ACMQ, or a
		// credit to an account on closing hold)
		return "STATE_GUARD"
	}
	return "BANK_ERROR"
}

var kindCodes = map[outbox.Kind]string{outbox.Debit: "D", outbox.Credit: "C", outbox.Reversal: "V"}

// Apply sends one posting and waits for the core's answer (outbox.Core).
func (l *Link) Apply(ctx context.Context, p outbox.Posting) (outbox.ApplyResult, error) {
	r := l.ApplyBatch(ctx, []outbox.Posting{p})[0]
	return r.ApplyResult, r.Err
}

// ApplyBatch sends postings in one MQ unit of work (N puts, one commit)
// and collects their replies together, bounded by the link's Timeout
// (outbox.BatchCore). results[i] answers ps[i] with the errors Apply
// returns: a posting that cannot be encoded is refused without being
// sent; when the unit provably did not reach the queue every sent posting
// is *outbox.NotSentError; a posting whose reply did not come in time is
// *outbox.InDoubtError.
func (l *Link) ApplyBatch(ctx context.Context, ps []outbox.Posting) []outbox.BatchResult {
	out := make([]outbox.BatchResult, len(ps))
	if l.cfg.Online != nil && !l.cfg.Online(l.clk.Now()) {
		for i := range out {
			out[i].Err = &outbox.NotSentError{Cause: fmt.Errorf("core %s is outside its online window", l.cfg.Bank)}
		}
		return out
	}
	var (
		idx    []int // ps index of each request sent
		bodies [][]byte
		reqIDs []string
	)
	for i, p := range ps {
		raw, reqID, err := l.encodePosting(p)
		if err != nil {
			// The core could never accept this posting: refuse it here,
			// without sending, so it becomes BLOCKED with a Case.
			out[i].Err = &outbox.RefusedError{ReasonCode: "INVALID_REQUEST", Message: err.Error()}
			continue
		}
		idx, bodies, reqIDs = append(idx, i), append(bodies, raw), append(reqIDs, reqID)
	}
	if len(idx) == 0 {
		return out
	}
	replies, errs := l.roundTrips(ctx, "posting", bodies)
	for k, i := range idx {
		if errs[k] != nil {
			out[i].Err = postingError(errs[k])
			continue
		}
		out[i].ApplyResult, out[i].Err = l.postingOutcome(ps[i], reqIDs[k], replies[k])
	}
	return out
}

// encodePosting encodes a posting request; the error means it cannot be
// encoded (nothing is sent).
func (l *Link) encodePosting(p outbox.Posting) (raw []byte, reqID string, err error) {
	acct, err := parseAccount(p.Account)
	if err != nil {
		return nil, "", err
	}
	req := &coremsg.PostingRequest{Kind: kindCodes[p.Kind], PostingRef: p.Ref, OriginalRef: p.ReversalOf,
		Branch: acct.Branch, AccountType: acct.Type, AccountNo: acct.Number, Amount: p.Amount, Currency: "JPY",
		ValueDate: strings.ReplaceAll(clock.BusinessDate(l.clk.Now()), "-", "")}
	reqID = uuid.New()
	raw, err = coremsg.Encode(&coremsg.Message{Header: coremsg.Header{RequestID: reqID, TxID: p.TxID,
		BankCode: l.cfg.Bank, Timestamp: coremsg.FormatTimestamp(l.clk.Now())}, Body: req}, l.cs)
	if err != nil {
		return nil, "", err
	}
	return raw, reqID, nil
}

// postingOutcome reads the core's reply to the posting request reqID.
func (l *Link) postingOutcome(p outbox.Posting, reqID string, body []byte) (outbox.ApplyResult, error) {
	reply, err := l.decodeReply("posting", body, coremsg.PostingReply{}.MsgType(), reqID)
	if err != nil {
		return outbox.ApplyResult{}, postingError(err)
	}
	r := reply.Body.(*coremsg.PostingReply)
	if strings.TrimSpace(r.PostingRef) != p.Ref {
		return outbox.ApplyResult{}, &outbox.InDoubtError{Cause: fmt.Errorf("reply names posting %q, sent %q", r.PostingRef, p.Ref)}
	}
	switch {
	case r.Status == "R" && reply.Header.ReturnCode == coremsg.RCBusiness:
		return outbox.ApplyResult{}, &outbox.RefusedError{ReasonCode: DomainReason(r.Reason),
			Message: fmt.Sprintf("core %s refused posting %s: %s", l.cfg.Bank, p.Ref, strings.TrimSpace(r.Reason))}
	case (r.Status == "A" || r.Status == "D") && reply.Header.ReturnCode <= coremsg.RCWarning:
		return outbox.ApplyResult{CoreRef: strings.TrimSpace(r.JournalNo), BalanceAfter: r.BalanceAfter}, nil
	}
	// RC 12/16 or an inconsistent reply: the outcome is not known.
	return outbox.ApplyResult{}, &outbox.InDoubtError{Cause: fmt.Errorf("core %s answered posting %s with status %q return code %d",
		l.cfg.Bank, p.Ref, r.Status, reply.Header.ReturnCode)}
}

// Lookup asks the core what became of a posting reference (outbox.Core).
// Any failure is an error: the outbox then keeps the posting in doubt.
func (l *Link) Lookup(ctx context.Context, ref string) (outbox.LookupResult, error) {
	reply, err := l.call(ctx, "status-inquiry", "", &coremsg.StatusInquiryRequest{PostingRef: ref})
	if err != nil {
		return outbox.LookupResult{}, l.inquiryError("status-inquiry", err)
	}
	r := reply.Body.(*coremsg.StatusInquiryReply)
	if strings.TrimSpace(r.PostingRef) != ref {
		return outbox.LookupResult{}, domainerr.New("BANK_ERROR",
			fmt.Sprintf("corelink: inquiry reply names %q, asked %q", r.PostingRef, ref), nil)
	}
	switch r.Status {
	case "A":
		return outbox.LookupResult{State: outbox.LookupApplied, CoreRef: strings.TrimSpace(r.JournalNo)}, nil
	case "R":
		return outbox.LookupResult{State: outbox.LookupRefused, ReasonCode: DomainReason(r.Reason)}, nil
	case "N":
		return outbox.LookupResult{State: outbox.LookupUnknown}, nil
	}
	// "P" (still being processed) proves nothing either way.
	return outbox.LookupResult{}, domainerr.New("BANK_TIMEOUT",
		fmt.Sprintf("corelink: core %s reports posting %s still in process", l.cfg.Bank, ref), nil)
}

// Balance is an account's balances at the core.
type Balance struct {
	Status    string // N normal, F frozen, H closing, C closed, X no such account
	Ledger    int64
	Available int64
	Held      int64
	Currency  string // ISO 4217 the core keeps the account in ("" when it has no such account)
}

// Balance asks the core for an account's balances.
func (l *Link) Balance(ctx context.Context, account string) (Balance, error) {
	acct, err := parseAccount(account)
	if err != nil {
		return Balance{}, err
	}
	reply, err := l.call(ctx, "balance", "", &coremsg.BalanceRequest{Branch: acct.Branch, AccountType: acct.Type, AccountNo: acct.Number})
	if err != nil {
		return Balance{}, l.inquiryError("balance", err)
	}
	r := reply.Body.(*coremsg.BalanceReply)
	return Balance{Status: r.AccountStatus, Ledger: r.Ledger, Available: r.Available, Held: r.HeldTotal,
		Currency: strings.TrimSpace(r.Currency)}, nil
}

// HoldResult is the core's answer to a hold or release.
type HoldResult struct {
	Accepted   bool
	ReasonCode string // spec-004 code when refused
	Available  int64
	Held       int64
}

// Hold places a hold of amount on the account under holdRef.
func (l *Link) Hold(ctx context.Context, txid, holdRef, account string, amount int64) (HoldResult, error) {
	return l.hold(ctx, "H", txid, holdRef, account, amount)
}

// Release releases the hold holdRef (amount must be the held amount).
func (l *Link) Release(ctx context.Context, txid, holdRef, account string, amount int64) (HoldResult, error) {
	return l.hold(ctx, "R", txid, holdRef, account, amount)
}

func (l *Link) hold(ctx context.Context, action, txid, holdRef, account string, amount int64) (HoldResult, error) {
	acct, err := parseAccount(account)
	if err != nil {
		return HoldResult{}, err
	}
	reply, err := l.call(ctx, "hold", txid, &coremsg.HoldRequest{Action: action, HoldRef: holdRef, Branch: acct.Branch,
		AccountType: acct.Type, AccountNo: acct.Number, Amount: amount, Currency: "JPY", ExpiryDate: "00000000"})
	if err != nil {
		return HoldResult{}, l.inquiryError("hold", err)
	}
	r := reply.Body.(*coremsg.HoldReply)
	res := HoldResult{Accepted: r.Status == "A", Available: r.Available, Held: r.HeldTotal}
	if !res.Accepted {
		res.ReasonCode = DomainReason(r.Reason)
	}
	return res, nil
}

// NameCheck answers M (match), U (mismatch) or N (no such account).
func (l *Link) NameCheck(ctx context.Context, account, name string) (string, error) {
	acct, err := parseAccount(account)
	if err != nil {
		return "", err
	}
	reply, err := l.call(ctx, "name-check", "", &coremsg.NameCheckRequest{Branch: acct.Branch, AccountType: acct.Type,
		AccountNo: acct.Number, Name: name})
	if err != nil {
		return "", l.inquiryError("name-check", err)
	}
	return reply.Body.(*coremsg.NameCheckReply).Result, nil
}

// VerifyResult is the core's answer to an account verification. The core
// never returns the stored name.
type VerifyResult struct {
	Result       string  // M, U or N
	Score        float64 // 1.0 exact, 0.8 one edit away, 0.0 otherwise
	FraudWarning bool
}

// Verify checks that an account exists and how well name matches it
// (name may be empty: existence only).
func (l *Link) Verify(ctx context.Context, verificationID, account, name string) (VerifyResult, error) {
	acct, err := parseAccount(account)
	if err != nil {
		return VerifyResult{}, err
	}
	reply, err := l.call(ctx, "account-verify", "", &coremsg.AccountVerifyRequest{VerificationID: verificationID,
		Branch: acct.Branch, AccountType: acct.Type, AccountNo: acct.Number, Name: name})
	if err != nil {
		return VerifyResult{}, l.inquiryError("account-verify", err)
	}
	r := reply.Body.(*coremsg.AccountVerifyReply)
	return VerifyResult{Result: r.Result, Score: float64(r.MatchScore) / 100, FraudWarning: r.FraudWarning == "Y"}, nil
}

// ScreenRequest is one AML screening question.
type ScreenRequest struct {
	Recheck          bool
	TxID             string
	Account          string
	Name             string
	Amount           int64
	CounterpartyBank string
	CounterpartyName string
}

// ScreenResult is C (clear), H (hit) or P (pending review), with the
// core's review case reference.
type ScreenResult struct {
	Result  string
	Reason  string
	CaseRef string
}

// Screen asks the bank's AML screening about a transfer.
func (l *Link) Screen(ctx context.Context, q ScreenRequest) (ScreenResult, error) {
	acct, err := parseAccount(q.Account)
	if err != nil {
		return ScreenResult{}, err
	}
	if q.CounterpartyBank == "" {
		q.CounterpartyBank = "0000"
	}
	ct := "I"
	if q.Recheck {
		ct = "R"
	}
	reply, err := l.call(ctx, "aml-screen", q.TxID, &coremsg.AMLScreenRequest{CheckType: ct, Branch: acct.Branch,
		AccountType: acct.Type, AccountNo: acct.Number, Name: q.Name, Amount: q.Amount, Currency: "JPY",
		CounterpartyBank: q.CounterpartyBank, CounterpartyName: q.CounterpartyName})
	if err != nil {
		return ScreenResult{}, l.inquiryError("aml-screen", err)
	}
	r := reply.Body.(*coremsg.AMLScreenReply)
	return ScreenResult{Result: r.Result, Reason: strings.TrimSpace(r.Reason), CaseRef: strings.TrimSpace(r.CaseRef)}, nil
}

// Notification is an incoming credit (CR) or request to pay (RP) told to
// the core.
type Notification struct {
	Kind      string // CR or RP
	TxID      string
	Account   string
	Amount    int64
	PayerBank string
	PayerName string
	Purpose   string
}

// Notify tells the core about a notification. The core is not idempotent:
// the caller sends each notification once.
func (l *Link) Notify(ctx context.Context, n Notification) (accepted bool, reason string, err error) {
	acct, err := parseAccount(n.Account)
	if err != nil {
		return false, "", err
	}
	if n.PayerBank == "" {
		n.PayerBank = "0000"
	}
	reply, err := l.call(ctx, "notify", n.TxID, &coremsg.NotifyRequest{Kind: n.Kind, Branch: acct.Branch,
		AccountType: acct.Type, AccountNo: acct.Number, Amount: n.Amount, Currency: "JPY", PayerBank: n.PayerBank,
		PayerName: n.PayerName, Purpose: n.Purpose})
	if err != nil {
		return false, "", l.inquiryError("notify", err)
	}
	r := reply.Body.(*coremsg.NotifyReply)
	if r.Result != "A" {
		return false, DomainReason(r.Reason), nil
	}
	return true, "", nil
}

// Account lifecycle actions (coremsg ACMQ).
const (
	MaintOpen  = "O" // open with a holder name, balance 0
	MaintHold  = "H" // closing hold: credits refused, debits allowed
	MaintLift  = "N" // lift the closing hold
	MaintClose = "C" // close: balance 0, no active hold
)

// MaintResult is the core's answer to a lifecycle action.
type MaintResult struct {
	// Applied: the account is now in the action's state. Duplicate: it
	// already was (a resend after a lost reply, or a repeated request).
	Applied, Duplicate bool
	// CoreReason is the core's own code of a refusal, ReasonCode its
	// spec-004 mapping.
	CoreReason, ReasonCode string
	Status                 string // N, H, C or X after the action
	Ledger, Held           int64
}

// MaintainAccount sends one lifecycle action for account (name: the
// holder name, for MaintOpen only) under ref. Every action assigns a
// state, so sending it again after a lost reply is safe: the core answers
// Duplicate.
func (l *Link) MaintainAccount(ctx context.Context, ref, action, account, name string) (MaintResult, error) {
	acct, err := parseAccount(account)
	if err != nil {
		return MaintResult{}, err
	}
	reply, err := l.call(ctx, "account-maintenance", "", &coremsg.AccountMaintRequest{Action: action, MaintRef: ref,
		Branch: acct.Branch, AccountType: acct.Type, AccountNo: acct.Number, Name: name})
	if err != nil {
		return MaintResult{}, l.inquiryError("account-maintenance", err)
	}
	r := reply.Body.(*coremsg.AccountMaintReply)
	if strings.TrimSpace(r.MaintRef) != ref {
		return MaintResult{}, domainerr.New("BANK_ERROR", fmt.Sprintf("corelink: account maintenance reply names %q, sent %q", r.MaintRef, ref), nil)
	}
	out := MaintResult{Applied: r.Status != "R", Duplicate: r.Status == "D", Status: r.AccountStatus, Ledger: r.Ledger, Held: r.HeldTotal}
	if !out.Applied {
		out.CoreReason = strings.TrimSpace(r.Reason)
		out.ReasonCode = DomainReason(r.Reason)
	}
	return out, nil
}
