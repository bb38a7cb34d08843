package adapter

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// CoreLinkInquiry is the Inquirer over a corelink.Link (balance inquiry
// BALQ, name check NMCQ over MQ).
type CoreLinkInquiry struct{ Link *corelink.Link }

var _ Inquirer = CoreLinkInquiry{}

// Balance is the account's ledger balance at the core and its currency.
// An account the core does not know (status X) is ACCOUNT_NOT_FOUND.
func (c CoreLinkInquiry) Balance(ctx context.Context, coreAccount string) (CoreBalance, error) {
	return LinkBalance(ctx, c.Link, coreAccount)
}

// LinkBalance asks the core over link for coreAccount's ledger balance
// and currency; an account the core does not know (status X) is
// ACCOUNT_NOT_FOUND.
func LinkBalance(ctx context.Context, link *corelink.Link, coreAccount string) (CoreBalance, error) {
	b, err := link.Balance(ctx, coreAccount)
	if err != nil {
		return CoreBalance{}, err
	}
	if b.Status == "X" {
		return CoreBalance{}, domainerr.New("ACCOUNT_NOT_FOUND", "the core has no such account", map[string]any{"core_account": coreAccount})
	}
	return CoreBalance{Ledger: b.Ledger, Currency: b.Currency}, nil
}

// NameCheck asks the core whether name is the holder's name.
func (c CoreLinkInquiry) NameCheck(ctx context.Context, coreAccount, name string) (NameResult, error) {
	r, err := c.Link.NameCheck(ctx, coreAccount, name)
	if err != nil {
		return "", err
	}
	switch r {
	case "M":
		return NameMatch, nil
	case "U":
		return NameMismatch, nil
	case "N":
		return NameNoAccount, nil
	}
	return "", domainerr.New("BANK_ERROR", fmt.Sprintf("core answered name check with %q", r), map[string]any{"core_account": coreAccount})
}
