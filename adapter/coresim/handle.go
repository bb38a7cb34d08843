package coresim

import (
	"context"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"strings"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/coremsg"
)

// ReasonWrongBank refuses a request addressed to another bank's core.
const ReasonWrongBank = "BADBANK"

// handle decodes one request and performs it inside tx. effect reports
// whether the request changed the ledger (and so must be remembered by
// MsgID). An error means the request cannot be processed at all (for
// example undecodable): the caller backs it out.
func (c *Core) handle(ctx context.Context, tx *store.Tx, msg *mq.Message) (reply []byte, effect bool, err error) {
	req, err := coremsg.Decode(msg.Body, c.cs)
	if err != nil {
		return nil, false, fmt.Errorf("coresim %s: undecodable request %s: %w", c.bank, msg.MsgID, err)
	}
	if q, ok := coremsg.Lookup(req.Header.MsgType); !ok || q.Reply {
		return nil, false, fmt.Errorf("coresim %s: message %s is a %s, not a request", c.bank, msg.MsgID, req.Header.MsgType)
	}
	now := c.clk.Now()
	stamp14 := coremsg.FormatTimestamp(now)[:14]
	wrongBank := strings.TrimLeft(req.Header.BankCode, "0") != strings.TrimLeft(c.bank, "0")
	rc := uint16(coremsg.RCOK)
	var body coremsg.Body
	switch b := req.Body.(type) {
	case *coremsg.PostingRequest:
		kind := map[string]string{"D": KindDebit, "C": KindCredit, "V": KindReversal}[b.Kind]
		out := PostOut{ReasonCode: ReasonWrongBank}
		if !wrongBank {
			out, err = c.post(ctx, tx, PostIn{Ref: b.PostingRef, TxID: req.Header.TxID,
				Account: coreacct.Format(b.Branch, b.AccountType, b.AccountNo), Kind: kind, Amount: b.Amount,
				ReversalOf: b.OriginalRef}, SourceMQ, msg.MsgID.String())
			if err != nil {
				return nil, false, err
			}
			effect = true
		}
		r := &coremsg.PostingReply{PostingRef: b.PostingRef, Status: "A"}
		if out.Applied {
			r.JournalNo = journalNo(out.JournalID)
			r.BalanceAfter = out.BalanceAfter
			bal, err := c.balance(ctx, tx, coreacct.Format(b.Branch, b.AccountType, b.AccountNo))
			if err != nil {
				return nil, false, err
			}
			r.AvailableAfter = bal.Available
			r.PostedAt = stamp14
		} else {
			r.Status, r.Reason, r.PostedAt = "R", out.ReasonCode, "00000000000000"
			rc = coremsg.RCBusiness
		}
		body = r
	case *coremsg.HoldRequest:
		acct := coreacct.Format(b.Branch, b.AccountType, b.AccountNo)
		out := HoldOut{ReasonCode: ReasonWrongBank}
		if !wrongBank {
			if b.Action == "H" {
				out, err = c.hold(ctx, tx, b.HoldRef, req.Header.TxID, acct, b.Amount)
			} else {
				out, err = c.release(ctx, tx, b.HoldRef, acct)
			}
			if err != nil {
				return nil, false, err
			}
			effect = out.Applied
		}
		r := &coremsg.HoldReply{HoldRef: b.HoldRef, Status: "A", Available: out.Available}
		if !out.Applied {
			r.Status, r.Reason = "R", out.ReasonCode
			rc = coremsg.RCBusiness
		}
		if bal, err := c.balance(ctx, tx, acct); err == nil {
			r.HeldTotal = bal.Held
			r.Available = bal.Available
		}
		body = r
	case *coremsg.BalanceRequest:
		bal, err := c.balance(ctx, tx, coreacct.Format(b.Branch, b.AccountType, b.AccountNo))
		if err != nil {
			return nil, false, err
		}
		r := &coremsg.BalanceReply{Branch: b.Branch, AccountType: b.AccountType, AccountNo: b.AccountNo,
			AccountStatus: "X", AsOf: stamp14}
		if bal.Found && !wrongBank {
			r.AccountStatus = statusCode(bal.Status)
			r.Currency = bal.Currency
			r.Ledger, r.Available, r.HeldTotal = bal.Balance, bal.Available, bal.Held
		}
		body = r
	case *coremsg.StatusInquiryRequest:
		lk, err := c.lookup(ctx, tx, b.PostingRef)
		if err != nil {
			return nil, false, err
		}
		r := &coremsg.StatusInquiryReply{PostingRef: b.PostingRef, Status: "N", PostedAt: "00000000000000"}
		switch lk.State {
		case StateApplied:
			var kind, at string
			if err := tx.QueryRowContext(ctx, `SELECT kind, amount, posted_at FROM CoreJournal WHERE journal_id = ?`,
				lk.JournalID).Scan(&kind, &r.Amount, &at); err != nil {
				return nil, false, err
			}
			r.Status, r.Kind, r.JournalNo = "A", kindCode(kind), journalNo(lk.JournalID)
			if t, err := clock.ParseStamp(at); err == nil {
				r.PostedAt = coremsg.FormatTimestamp(t)[:14]
			}
		case StateRefused:
			var kind string
			if err := tx.QueryRowContext(ctx, `SELECT kind, amount FROM CoreRefusals WHERE ref = ?
				ORDER BY refusal_id DESC LIMIT 1`, b.PostingRef).Scan(&kind, &r.Amount); err != nil {
				return nil, false, err
			}
			r.Status, r.Kind, r.Reason = "R", kindCode(kind), lk.ReasonCode
		}
		body = r
	case *coremsg.NameCheckRequest:
		bal, err := c.balance(ctx, tx, coreacct.Format(b.Branch, b.AccountType, b.AccountNo))
		if err != nil {
			return nil, false, err
		}
		r := &coremsg.NameCheckReply{Result: "N"}
		if bal.Found && bal.Status == "OPEN" && !wrongBank {
			r.Result = "U"
			if kanaKey(bal.Name) == kanaKey(b.Name) {
				r.Result = "M"
			}
		}
		body = r
	case *coremsg.AccountVerifyRequest:
		bal, err := c.balance(ctx, tx, coreacct.Format(b.Branch, b.AccountType, b.AccountNo))
		if err != nil {
			return nil, false, err
		}
		r := &coremsg.AccountVerifyReply{VerificationID: b.VerificationID, Result: "N", FraudWarning: "N",
			NameProvided: b.Name}
		if bal.Found && bal.Status == "OPEN" && !wrongBank {
			r.Result = "M"
			if strings.TrimSpace(b.Name) != "" {
				switch d := editDistance(kanaKey(bal.Name), kanaKey(b.Name)); {
				case d == 0:
					r.MatchScore = 100
				case d == 1:
					r.Result, r.MatchScore = "U", 80
				default:
					r.Result, r.MatchScore = "U", 0
				}
			}
			if listed, err := c.screened(ctx, tx, kanaKey(bal.Name)); err != nil {
				return nil, false, err
			} else if listed {
				r.FraudWarning = "Y"
			}
		}
		body = r
	case *coremsg.AMLScreenRequest:
		r := &coremsg.AMLScreenReply{Result: "C"}
		for _, n := range []string{b.Name, b.CounterpartyName} {
			if strings.TrimSpace(n) == "" {
				continue
			}
			listed, err := c.screened(ctx, tx, kanaKey(n))
			if err != nil {
				return nil, false, err
			}
			if listed {
				r.Result, r.Reason = "H", "WATCHLST"
				r.CaseRef = fmt.Sprintf("AML-%s", msg.MsgID.String()[:16])
			}
		}
		body = r
	case *coremsg.NotifyRequest:
		acct := coreacct.Format(b.Branch, b.AccountType, b.AccountNo)
		bal, err := c.balance(ctx, tx, acct)
		if err != nil {
			return nil, false, err
		}
		r := &coremsg.NotifyReply{Result: "A"}
		if !bal.Found || bal.Status != "OPEN" || wrongBank {
			r.Result, r.Reason = "R", ReasonAccountNotFound
			rc = coremsg.RCBusiness
		} else {
			if _, err := c.notify(ctx, tx, Notification{Ref: req.Header.RequestID, TxID: req.Header.TxID, Account: acct,
				Kind: b.Kind, Amount: b.Amount, Text: strings.TrimSpace(b.PayerName + " " + b.Purpose)}, msg.MsgID.String()); err != nil {
				return nil, false, err
			}
			effect = true
		}
		body = r
	case *coremsg.AccountMaintRequest:
		out := MaintOut{ReasonCode: ReasonWrongBank}
		if !wrongBank {
			out, err = c.maintain(ctx, tx, b.Action, coreacct.Format(b.Branch, b.AccountType, b.AccountNo), b.Name)
			if err != nil {
				return nil, false, err
			}
			effect = out.Applied && !out.Duplicate
		}
		r := &coremsg.AccountMaintReply{MaintRef: b.MaintRef, Status: "A", AccountStatus: statusCode(out.Status),
			Ledger: out.Balance, HeldTotal: out.Held, ProcessedAt: stamp14}
		switch {
		case out.Duplicate:
			r.Status = "D"
		case !out.Applied:
			r.Status, r.Reason, r.ProcessedAt = "R", out.ReasonCode, "00000000000000"
			rc = coremsg.RCBusiness
		}
		c.log.InfoContext(ctx, "coresim.account_maint", "bank", c.bank, "ref", b.MaintRef, "action", b.Action,
			"status", r.Status, "reason_code", r.Reason, "lifecycle", r.AccountStatus)
		body = r
	default:
		return nil, false, fmt.Errorf("coresim %s: no handler for %s", c.bank, req.Header.MsgType)
	}
	out, err := coremsg.Encode(&coremsg.Message{Header: coremsg.Header{RequestID: req.Header.RequestID,
		TxID: req.Header.TxID, BankCode: c.bank, Timestamp: coremsg.FormatTimestamp(now), ReturnCode: rc}, Body: body}, c.cs)
	if err != nil {
		return nil, false, fmt.Errorf("coresim %s: encode reply to %s: %w", c.bank, req.Header.MsgType, err)
	}
	return out, effect, nil
}

func journalNo(id int64) string { return fmt.Sprintf("J%012d", id) }

func kindCode(kind string) string {
	switch kind {
	case KindDebit:
		return "D"
	case KindCredit:
		return "C"
	case KindReversal:
		return "V"
	}
	return ""
}
