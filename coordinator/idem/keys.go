package idem

import (
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// The key scopes of spec 002 §12.4, fixed format. Every part is required:
// dropping leg_id or attempt_id would merge two legs or two attempts into
// one request, and dropping issuer would let a ZC command and a
// participant event collide. No part may contain ':' (it would make two
// different keys print the same).

// TxKey is TX:{txid}:{name}:{issuer}.
func TxKey(txid, name, issuer string) (string, error) {
	return build("TX", part{"txid", txid}, part{"name", name}, part{"issuer", issuer})
}

// GtKey is GT:{gtid}:{name}:{issuer}.
func GtKey(gtid, name, issuer string) (string, error) {
	return build("GT", part{"gtid", gtid}, part{"name", name}, part{"issuer", issuer})
}

// LegKey is LEG:{gtid}:{leg_id}:{name}:{issuer}.
func LegKey(gtid, legID, name, issuer string) (string, error) {
	return build("LEG", part{"gtid", gtid}, part{"leg_id", legID}, part{"name", name}, part{"issuer", issuer})
}

// RtpKey is RTP:{rtp_id}:{attempt_id}:{name}:{issuer}.
func RtpKey(rtpID, attemptID, name, issuer string) (string, error) {
	return build("RTP", part{"rtp_id", rtpID}, part{"attempt_id", attemptID}, part{"name", name}, part{"issuer", issuer})
}

// CaseKey is CASE:{case_id}:{name}:{issuer}.
func CaseKey(caseID, name, issuer string) (string, error) {
	return build("CASE", part{"case_id", caseID}, part{"name", name}, part{"issuer", issuer})
}

// SigKey is sig:{key_id}:{nonce}, the single-use signature-replay key:
// acquire it with a nil body (no hash stored, never a body conflict).
func SigKey(keyID, nonce string) (string, error) {
	return build("sig", part{"key_id", keyID}, part{"nonce", nonce})
}

type part struct{ field, value string }

func build(scope string, parts ...part) (string, error) {
	var b strings.Builder
	b.WriteString(scope)
	for _, p := range parts {
		if strings.TrimSpace(p.value) == "" {
			return "", domainerr.New("MISSING_FIELD",
				"idempotency key "+scope+" needs "+p.field,
				map[string]any{"scope": scope, "field": p.field})
		}
		if strings.Contains(p.value, ":") {
			return "", domainerr.New("INVALID_REQUEST",
				"idempotency key "+scope+": "+p.field+" must not contain ':'",
				map[string]any{"scope": scope, "field": p.field, "value": p.value})
		}
		b.WriteByte(':')
		b.WriteString(p.value)
	}
	return b.String(), nil
}
