package gateway

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// Viewer is who reads one transfer on a read route: its payer bank, its
// payee bank (both for a transfer inside one bank), or the operator (ZC).
type Viewer struct {
	Payer, Payee, Operator bool
}

// viewerOf places an authorized subject against the transfer it reads.
func viewerOf(sub subject, v *orchestrator.View) Viewer {
	if sub.Type != SubjectParticipant {
		return Viewer{Operator: true}
	}
	return Viewer{Payer: sub.BankID == v.PayerBankID, Payee: sub.BankID == v.PayeeBankID}
}

// FieldRule says which parties may see a member of a read route's body
// or of an event payload. Field is a JSON member name anywhere in the
// document, or "parent.member" for a member of an object named parent
// (payer.account_hash is the payer's account, payee.account_hash is not
// hidden).
type FieldRule struct {
	Field                  string
	Payer, Payee, Operator bool
	Why                    string
}

// Visibility is the one table of per-party field visibility
// (docs/gateway.md "What each party sees"). A member not listed is a
// shared fact of the transfer (amount, lane, states, bank ids, proofs,
// reason codes) and visible to both parties and the operator. Secret
// members (zclog.IsSecretKey: vault_ref, preimage, secret, password,
// *_pii) are served to nobody, whatever the table says.
var Visibility = []FieldRule{
	{Field: "payer.account_hash", Payer: true, Operator: true, Why: "the payer's account"},
	{Field: "payer_account_hash", Payer: true, Operator: true, Why: "the payer's account"},
	{Field: "participant_ref", Payer: true, Operator: true, Why: "the payer's own reference"},
	{Field: "client_ref", Payer: true, Operator: true, Why: "the payer's customer reference"},
	{Field: "ref_issuer", Payer: true, Operator: true, Why: "the payer's reference proof"},
	{Field: "ref_proof", Payer: true, Operator: true, Why: "the payer's reference proof"},
	{Field: "risk_hint", Payer: true, Operator: true, Why: "the payer's risk assessment"},
	{Field: "idempotency_key", Payer: true, Operator: true, Why: "the payer's retry key"},
	{Field: hlimit.DailyDateKey, Payer: true, Operator: true, Why: "the payer's daily limit bookkeeping"},
	{Field: "hv_escalation", Payer: true, Operator: true, Why: "the payer's hv_threshold"},
	{Field: "h_reservation_id", Payer: true, Operator: true, Why: "the payer's liquidity hold"},
	{Field: "bank_reservation_ref", Payer: true, Operator: true, Why: "the payer bank's hold reference"},
	{Field: "boj_balance", Payer: true, Operator: true, Why: "the payer's BOJ balance"},
	{Field: "account_resolved_ref", Payee: true, Operator: true, Why: "the payee bank's resolution of pspr_ref"},
	{Field: "resolved_account_hash", Payee: true, Operator: true, Why: "the payee bank's resolution of pspr_ref"},
}

var visibilityIndex = func() map[string]FieldRule {
	m := make(map[string]FieldRule, len(Visibility))
	for _, r := range Visibility {
		m[r.Field] = r
	}
	return m
}()

// Sees reports whether v may see member key of an object that is the
// value of member parent ("" at the top).
func (v Viewer) Sees(parent, key string) bool {
	if zclog.IsSecretKey(key) {
		return false
	}
	r, ok := visibilityIndex[parent+"."+key]
	if !ok {
		if r, ok = visibilityIndex[key]; !ok {
			return true
		}
	}
	return (v.Payer && r.Payer) || (v.Payee && r.Payee) || (v.Operator && r.Operator)
}

// Filter returns the JSON document raw with every member v may not see
// removed, and whether anything was removed. An unchanged document is
// returned byte for byte (so a payload's entry_hash still verifies over
// it); a document that is not JSON is returned as is.
func (v Viewer) Filter(raw []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return raw, false
	}
	out, changed := v.walk("", doc)
	if !changed {
		return raw, false
	}
	b, err := json.Marshal(out)
	if err != nil {
		return raw, false
	}
	return b, true
}

func (v Viewer) walk(parent string, x any) (any, bool) {
	switch t := x.(type) {
	case map[string]any:
		changed := false
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !v.Sees(parent, k) {
				delete(t, k)
				changed = true
				continue
			}
			nv, c := v.walk(k, t[k])
			t[k], changed = nv, changed || c
		}
		return t, changed
	case []any:
		changed := false
		for i := range t {
			nv, c := v.walk(parent, t[i])
			t[i], changed = nv, changed || c
		}
		return t, changed
	}
	return x, false
}
