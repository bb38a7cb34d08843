package filedrop

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/formats/zengin"
)

// AccountHash is the account_hash of a Zengin account: "h:" followed by
// the hex SHA-256 of "<salt>|<bank code>|<branch code>|<預金種目>|<口座番号>"
// (4-digit bank code, 3-digit branch, 1-digit type, 7-digit account, as in
// the file). It is deterministic, so the same account always has the same
// hash, and a bank adapter can compute it from its own account keys.
func AccountHash(salt, bankCode, branchCode string, accountType uint8, accountNumber string) string {
	h := sha256.Sum256([]byte(salt + "|" + bankCode + "|" + branchCode + "|" + strconv.Itoa(int(accountType)) + "|" + accountNumber))
	return "h:" + hex.EncodeToString(h[:])
}

// Account names an account as a Zengin record does: the 4-digit bank
// code, the 3-digit branch code, 預金種目 and the 7-digit account number.
type Account struct {
	BankCode, BranchCode string
	Type                 uint8
	Number               string
}

// accountHash is the account_hash a record's account is sent with: the
// operator's (Config.Accounts) when it is listed, else AccountHash.
func (c *Config) accountHash(a Account) string {
	if h, ok := c.Accounts[a]; ok {
		return h
	}
	return AccountHash(c.AccountSalt, a.BankCode, a.BranchCode, a.Type, a.Number)
}

// TxID is the txid of the transfer made from record recordNo (1-based,
// counting every record of the file) of the file with SHA-256 fileHash
// (hex): "TX-", the first 18 hex digits (72 bits) of
// SHA-256("zcgw-filedrop|<fileHash>"), "-" and recordNo in 10 digits (32
// characters, ident.TxID's bound). A file's txids sort in record order:
// a chunk of consecutive records lands on a few neighbouring pages of
// every index keyed by txid instead of one page per record (issue 14:
// the pages a commit writes, not the rows, bounded the file drop).
func TxID(fileHash string, recordNo int) string {
	h := sha256.Sum256([]byte("zcgw-filedrop|" + fileHash))
	return fmt.Sprintf("TX-%s-%010d", hex.EncodeToString(h[:9]), recordNo)
}

// IdempotencyKey is the idempotency key under which record recordNo of
// the file with SHA-256 fileHash is submitted: "FD:<fileHash>:<recordNo>".
// The coordinator scopes it to the issuing bank.
func IdempotencyKey(fileHash string, recordNo int) string {
	return "FD:" + fileHash + ":" + strconv.Itoa(recordNo)
}

// Purpose is the PaymentInitiated purpose of a file kind: SALARY for
// 給与 and 賞与 (11, 12 and 公務員 71, 72), BILL for 総合振込 (21).
func Purpose(k zengin.Kind) string {
	if k.Payroll() {
		return "SALARY"
	}
	return "BILL"
}

// payment builds the BULK PaymentInitiated of one data record. Every field
// is derived from the file's bytes only (no clock), so a replay after a
// crash sends the same body under the same key.
func payment(hashOf func(Account) string, fileHash string, recordNo int, h *zengin.Header, payerBank, payeeBank string, acc zengin.Account, amount int64) orchestrator.PaymentInitiated {
	return orchestrator.PaymentInitiated{
		TxID:      TxID(fileHash, recordNo),
		Lane:      orchestrator.LaneBulk,
		Amount:    bankapi.Amount{Value: amount, Currency: "JPY"},
		Payer:     orchestrator.Party{BankID: payerBank, AccountHash: hashOf(Account{h.BankCode, h.BranchCode, h.AccountType, h.AccountNumber})},
		Payee:     orchestrator.Party{BankID: payeeBank, AccountHash: hashOf(Account{acc.BankCode, acc.BranchCode, acc.AccountType, acc.AccountNumber})},
		Purpose:   Purpose(h.Kind),
		ClientRef: "zengin:" + fileHash[:16] + ":" + strconv.Itoa(recordNo),
	}
}

// recordEDI is the EDI情報 of a 総合振込 record whose 識別表示 is Y (its
// trailing spaces cut), carried as the transfer's edi_ref to the payee
// bank's execute-credit; "" for any other record.
func recordEDI(r zengin.Record) string {
	if d, ok := r.(*zengin.TransferData); ok && d.IsEDI {
		return strings.TrimRight(d.EDI, " ")
	}
	return ""
}

// dataAccount returns the account and amount of a transfer or payroll
// record.
func dataAccount(r zengin.Record) (zengin.Account, int64, bool) {
	switch d := r.(type) {
	case *zengin.TransferData:
		return d.Account, d.Amount, true
	case *zengin.PayrollData:
		return d.Account, d.Amount, true
	}
	return zengin.Account{}, 0, false
}
