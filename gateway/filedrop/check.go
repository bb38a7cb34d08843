package filedrop

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
	"github.com/zcgw/zcgw/formats/zengin"
)

// check validates a whole file: first the Zengin format (formats/zengin:
// every record, field, order and trailer total), then, only when the
// format is valid, the file-drop rules. It returns the summary and a
// *fixed.ErrorList when anything is wrong, or an I/O / lookup error.
//
// File-drop rules (each error names its record, line, offset and field):
//   - 種別コード 91 (口座振替) is refused: a direct debit must be initiated
//     by the debtor's bank, so a creditor's bank cannot drop one;
//   - every header's 仕向銀行番号 is the dropping bank's Zengin code;
//   - every 被仕向銀行番号 resolves to an active participant;
//   - every 振込金額 is at least 1 yen;
//   - no record pays the header's own account (same bank, branch, 預金種目
//     and 口座番号).
func (p *Processor) check(ctx context.Context, bank Bank, r io.ReadSeeker, payees map[string]string) (zengin.Summary, error) {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return zengin.Summary{}, err
	}
	sum, err := zengin.ValidateOptions(r, zengin.Options{MaxErrors: p.cfg.MaxErrors, Names: bank.Names})
	if err != nil {
		return sum, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return sum, err
	}
	stride := int64(zengin.RecordLen)
	if sum.Separator == recordio.SepCRLF {
		stride += 2
	}
	errs := fixed.NewErrorList(p.cfg.MaxErrors)
	var h *zengin.Header
	n := 0
	for rec, err := range zengin.NewReaderOptions(r, zengin.Options{Names: bank.Names}).Records() {
		if err != nil {
			return sum, fmt.Errorf("filedrop: file changed while it was checked: %w", err)
		}
		n++
		at := ruleAt{record: n, offset: int64(n-1) * stride, line: int64(n)}
		if sum.Separator != recordio.SepCRLF {
			at.line = 1
		}
		switch rec := rec.(type) {
		case *zengin.Header:
			h = rec
			if rec.Kind == zengin.KindDebit {
				errs.Add(at.err(zengin.HeaderLayout, "Kind", "91",
					"口座振替 (91) files are not accepted by the file drop: a direct debit is initiated by the debtor's bank; drop a 総合振込 (21) or 給与/賞与 (11/12) file"))
			}
			if rec.BankCode != bank.ZenginCode {
				errs.Add(at.err(zengin.HeaderLayout, "BankCode", rec.BankCode,
					fmt.Sprintf("仕向銀行番号 %s is not this folder's bank %s (%s)", rec.BankCode, bank.ZenginCode, bank.ID)))
			}
		default:
			acc, amount, ok := dataAccount(rec)
			if !ok {
				continue
			}
			if _, found := payees[acc.BankCode]; !found {
				id, err := p.resolve(ctx, acc.BankCode)
				if err != nil {
					return sum, err
				}
				payees[acc.BankCode] = id
			}
			if payees[acc.BankCode] == "" {
				errs.Add(at.err(rec.Layout(), "BankCode", acc.BankCode,
					fmt.Sprintf("被仕向銀行番号 %s is not an active participant", acc.BankCode)))
			}
			if amount < 1 {
				errs.Add(at.err(rec.Layout(), "Amount", fmt.Sprintf("%010d", amount), "振込金額 must be at least 1 yen"))
			}
			if h != nil && acc.BankCode == h.BankCode && acc.BranchCode == h.BranchCode && acc.AccountType == h.AccountType && acc.AccountNumber == h.AccountNumber {
				errs.Add(at.err(rec.Layout(), "AccountNumber", acc.AccountNumber, "the payee is the header's own account"))
			}
		}
	}
	return sum, errs.Err()
}

// ruleAt locates a record for a file-drop rule error.
type ruleAt struct {
	record int
	offset int64
	line   int64
}

func (a ruleAt) err(l *fixed.Layout, field, canonical, msg string) *fixed.Error {
	f, _ := l.Field(field)
	return &fixed.Error{Record: a.record, RecordType: l.Name(), Field: f.Name, Label: f.Label,
		Offset: a.offset + int64(f.Start-1), Column: f.Start, Bytes: []byte(canonical), Reason: fixed.Invalid,
		Err: &recordio.LineError{Line: a.line, Msg: msg}}
}

// resolve maps a 4-digit 全銀 bank code to an active participant's bank_id
// ("" when there is none): Config.Directory first, else the participant
// whose bank_id is the code, else the code without its leading zero.
func (p *Processor) resolve(ctx context.Context, code string) (string, error) {
	candidates := []string{code}
	if id, ok := p.cfg.Directory[code]; ok {
		candidates = []string{id}
	} else if len(code) == 4 && code[0] == '0' {
		candidates = append(candidates, code[1:])
	}
	for _, id := range candidates {
		part, err := p.cfg.Participants.Get(ctx, id)
		if domainerr.Code(err) == "PARTICIPANT_NOT_FOUND" {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("filedrop: look up participant %s: %w", id, err)
		}
		if part.IsActive {
			return id, nil
		}
	}
	return "", nil
}

var errNotReady = errors.New("filedrop: not every transfer is decided yet")
