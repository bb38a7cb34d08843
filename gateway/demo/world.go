package demo

import (
	"crypto/rand"
	"encoding/hex"
	"github.com/zcgw/zcgw/formats/coreacct"

	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/gateway/filedrop"
	"github.com/zcgw/zcgw/gateway/node"
)

// account is one customer account of the demo day. Its account_hash is
// the file drop's hash of its Zengin coordinates, so the same account can
// be paid over the API and from a dropped Zengin file.
type account struct {
	Key     string // short name used in the script and the printout, e.g. "001/SATO"
	Bank    string
	Branch  string
	Number  string
	Name    string // half-width katakana, as the core and the Zengin file carry it
	Opening int64
	PSPR    string // a payee reference registered for the account at its bank ("" for none)
	// Currency is the account's currency, "" for yen (the FX scene's
	// dollar accounts, fx.go).
	Currency string
}

const accountType = 1 // 普通

// Hash is the account_hash on the API.
func (a account) Hash() string {
	return filedrop.AccountHash(filedrop.DefaultAccountSalt, filedrop.DefaultZenginCode(a.Bank), a.Branch, accountType, a.Number)
}

// Core is the core's account key.
func (a account) Core() string { return coreacct.Format(a.Branch, accountType, a.Number) }

// bankSpec is one participant of the demo day.
type bankSpec struct {
	ID       string
	Name     string
	RealTime bool // false: a batch-window bank (name checks deferred; it sends Zengin files)
}

// The demo's banks: two real-time banks and one batch-window shinkin bank
// that never calls the API and drops Zengin files instead.
var banks = []bankSpec{
	{ID: "001", Name: "Sakura Demo Bank", RealTime: true},
	{ID: "002", Name: "Kaede Demo Bank", RealTime: true},
	{ID: "003", Name: "Momiji Shinkin (batch window)", RealTime: false},
}

// The demo's accounts (opening balances in yen).
var accounts = []account{
	{Key: "001/SATO", Bank: "001", Branch: "001", Number: "0000001", Name: "ｻﾄｳ ﾊﾅｺ", Opening: 5_000_000},
	{Key: "001/SUZUKI", Bank: "001", Branch: "001", Number: "0000002", Name: "ｽｽﾞｷ ｲﾁﾛｳ", Opening: 3_000_000},
	{Key: "001/TANAKA", Bank: "001", Branch: "001", Number: "0000003", Name: "ﾀﾅｶ ｼﾞﾛｳ", Opening: 1_000},
	{Key: "002/YAMADA", Bank: "002", Branch: "001", Number: "0000001", Name: "ﾔﾏﾀﾞ ﾀﾛｳ", Opening: 2_000_000},
	{Key: "002/KOBAYASHI", Bank: "002", Branch: "001", Number: "0000002", Name: "ｺﾊﾞﾔｼ ﾕｲ", Opening: 1_000_000, PSPR: "PSPR-KOBAYASHI-CAFE"},
	{Key: "003/MOMIJI", Bank: "003", Branch: "001", Number: "1234567", Name: "ﾓﾐｼﾞ ｼﾖｳｼﾞ", Opening: 50_000_000},
	{Key: "003/KATO", Bank: "003", Branch: "001", Number: "0000002", Name: "ｶﾄｳ ｹﾝ", Opening: 500_000},
	// The FX scene (fx.go): Kaede's FX desk holds yen and dollars; Suzuki
	// keeps a dollar account at Sakura. Dollar amounts are in cents.
	{Key: "002/FXDESK-JPY", Bank: "002", Branch: "900", Number: "0000001", Name: "ｶｴﾃﾞ ｶﾞｲﾀﾒ", Opening: 0},
	{Key: "002/FXDESK-USD", Bank: "002", Branch: "900", Number: "0000002", Name: "ｶｴﾃﾞ ｶﾞｲﾀﾒ", Opening: 5_000_000, Currency: "USD"},
	{Key: "001/SUZUKI-USD", Bank: "001", Branch: "900", Number: "0000002", Name: "ｽｽﾞｷ ｲﾁﾛｳ", Opening: 0, Currency: "USD"},
}

// unknownAccount is an account number no bank holds (a transfer to it is
// cancelled).
var unknownAccount = account{Key: "002/UNKNOWN", Bank: "002", Branch: "001", Number: "9999999", Name: "ｱﾘﾏｾﾝ"}

func accountByKey(key string) account {
	for _, a := range accounts {
		if a.Key == key {
			return a
		}
	}
	if key == unknownAccount.Key {
		return unknownAccount
	}
	panic("demo: no account " + key)
}

// bojOpening is each bank's opening balance on its simulated BOJ current
// account, which DNS net debits are paid from.
const bojOpening = int64(1_000_000_000)

// nodeConfig is the node configuration of the demo day: the demo's banks
// with their accounts, an operator key and one API key per bank, each a
// fresh random secret (nothing of the demo is reusable outside the run).
func nodeConfig() node.Config {
	cfg := node.Config{Addr: "127.0.0.1:0", CronSecret: randomSecret(), Workers: 2,
		APIKeys: []node.APIKey{{Scope: signing.ScopeOperator, Name: "demo-operator", Secret: node.Secret{Current: randomSecret()}}}}
	for _, b := range banks {
		boj := bojOpening
		bc := node.BankConfig{BankID: b.ID, Name: b.Name, HLimit: 10_000_000_000_000, RealTime: b.RealTime, BOJOpening: &boj}
		fxWorld(&bc)
		for _, a := range accounts {
			if a.Bank == b.ID {
				na := node.Account{Hash: a.Hash(), CoreAccount: a.Core(), Name: a.Name, Balance: a.Opening, Currency: a.Currency}
				if a.PSPR != "" {
					na.PSPRRefs = []string{a.PSPR}
				}
				bc.Accounts = append(bc.Accounts, na)
			}
		}
		cfg.Banks = append(cfg.Banks, bc)
		cfg.APIKeys = append(cfg.APIKeys, node.APIKey{Scope: signing.ScopeParticipant, BankID: b.ID, Name: "bank-" + b.ID,
			Secret: node.Secret{Current: randomSecret()}})
	}
	return cfg
}

func randomSecret() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("demo: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}
