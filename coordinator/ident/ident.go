package ident

import (
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// Charset is a set of printable ASCII bytes (0x21..0x7e).
type Charset struct {
	name  string
	allow [128]bool
}

func charset(name, extra string) Charset {
	c := Charset{name: name}
	for b := '0'; b <= '9'; b++ {
		c.allow[b] = true
	}
	for b := 'A'; b <= 'Z'; b++ {
		c.allow[b] = true
		c.allow[b+'a'-'A'] = true
	}
	for i := 0; i < len(extra); i++ {
		if extra[i] <= ' ' || extra[i] > '~' {
			panic("ident: charset " + name + " with a byte outside printable ASCII")
		}
		c.allow[extra[i]] = true
	}
	return c
}

// Contains reports whether b is in the set.
func (c Charset) Contains(b byte) bool { return b < 128 && c.allow[b] }

// String names the set as the documentation does.
func (c Charset) String() string { return c.name }

// The character sets. ':' separates the parts of composite keys
// (coordinator/idem) and '/' separates path segments, so the kinds that
// are embedded in those keys or paths exclude them; '-' separates a
// payer's namespace from the rest of a client-chosen txid, so a bank id
// excludes it.
var (
	// Alnum: A-Z a-z 0-9 _
	Alnum = charset("A-Z a-z 0-9 _", "_")
	// Token: A-Z a-z 0-9 . _ -
	Token = charset("A-Z a-z 0-9 . _ -", "._-")
	// Ref: A-Z a-z 0-9 . _ - :
	Ref = charset("A-Z a-z 0-9 . _ - :", "._-:")
	// Key: A-Z a-z 0-9 . _ - : + / = @
	Key = charset("A-Z a-z 0-9 . _ - : + / = @", "._-:+/=@")
)

// Kind is one identifier kind: its name (the field name used in errors and
// docs), its character set and its maximum length in bytes.
type Kind struct {
	Name    string
	Charset Charset
	Max     int
	// Where says where the bound comes from (docs/gateway.md).
	Where string
}

// The identifier kinds. Max is in bytes (every allowed byte is one ASCII
// character).
var (
	// TxID: the coremsg header carries it in a 32-byte field (取引ID), so a
	// longer one could never reach a core; no ':' (idem keys) or '/'.
	TxID = Kind{"txid", Token, 32, "formats/coremsg header 取引ID X(32)"}
	// IdempotencyKey: client idempotency keys and the file drop's
	// FD:<sha256>:<record> (75+ bytes).
	IdempotencyKey = Kind{"idempotency_key", Key, 128, "bound (file drop keys are ~75 bytes)"}
	// RequestID: X-Request-Id and bankapi request_id (TX:<txid>:<command>:ZC).
	RequestID = Kind{"request_id", Key, 128, "bound (ZC request ids are <= 64 bytes)"}
	// AccountHash: h:<64 hex> from the file drop, opaque from banks.
	AccountHash = Kind{"account_hash", Ref, 128, "bound (h:<sha256 hex> is 66 bytes)"}
	// BankID: a participant's bank_id (全銀 bank code or a short name).
	BankID = Kind{"bank_id", Alnum, 16, "bound (全銀 bank codes are 4 digits)"}
	// ParticipantRef, ClientRef, PSPRRef, RefIssuer, VaultRef: references
	// a bank or client chooses.
	ParticipantRef = Kind{"participant_ref", Ref, 128, "bound"}
	ClientRef      = Kind{"client_ref", Ref, 128, "bound"}
	PSPRRef        = Kind{"pspr_ref", Ref, 128, "bound"}
	RefIssuer      = Kind{"ref_issuer", Ref, 64, "bound"}
	VaultRef       = Kind{"vault_ref", Ref, 128, "bound"}
	// RefProof: a signature or token, possibly base64.
	RefProof = Kind{"ref_proof", Key, 512, "bound (an Ed25519 signature in base64 is 88 bytes)"}
	// Purpose: PaymentInitiated.purpose (P2P, SALARY, BILL, MERCHANT, ...).
	Purpose = Kind{"purpose", Token, 32, "bound"}
	// Nonce: X-ZC-Sig-Nonce and X-Participant-Sig-Nonce (32 hex digits
	// from signing.NewNonce).
	Nonce = Kind{"nonce", Token, 128, "bound (signing.NewNonce is 32 bytes)"}
	// KeyID: X-ZC-Key-Id and X-Participant-Key-Id.
	KeyID = Kind{"key_id", Token, 64, "bound"}
	// BankRef covers the other references on the bank ingress (gtid, leg_id,
	// rtp_id, verification_id, reservation_ref, decision_proof_ref).
	BankRef = Kind{"ref", Ref, 128, "bound"}
)

// Kinds lists every kind, for documentation and tests.
var Kinds = []Kind{TxID, IdempotencyKey, RequestID, AccountHash, BankID, ParticipantRef, ClientRef, PSPRRef,
	RefIssuer, VaultRef, RefProof, Purpose, Nonce, KeyID, BankRef}

// Problem is why a value is not an identifier of its kind: Offset is the
// byte offset of the first refused byte, or -1 for a length problem.
type Problem struct {
	Reason string
	Offset int
}

// Inspect returns nil when v is a non-empty identifier of kind k, else the
// problem. Emptiness is a problem here; Check leaves it to the caller.
func (k Kind) Inspect(v string) *Problem {
	if v == "" {
		return &Problem{Reason: "is empty", Offset: -1}
	}
	if len(v) > k.Max {
		return &Problem{Reason: fmt.Sprintf("is %d bytes, longer than %d", len(v), k.Max), Offset: -1}
	}
	for i := 0; i < len(v); i++ {
		if !k.Charset.Contains(v[i]) {
			return &Problem{Reason: fmt.Sprintf("has %s at byte %d; allowed: %s", describe(v[i]), i, k.Charset), Offset: i}
		}
	}
	return nil
}

// Valid reports whether v is a non-empty identifier of kind k.
func (k Kind) Valid(v string) bool { return k.Inspect(v) == nil }

func describe(b byte) string {
	switch {
	case b == 0:
		return "a NUL byte"
	case b == '\n' || b == '\r':
		return "a line break"
	case b == ' ':
		return "a space"
	case b < ' ' || b == 0x7f:
		return fmt.Sprintf("control byte 0x%02x", b)
	case b >= 0x80:
		return fmt.Sprintf("non-ASCII byte 0x%02x", b)
	}
	return fmt.Sprintf("%q", string(rune(b)))
}

// Check refuses a non-empty v that is not an identifier of kind k with
// INVALID_REQUEST naming field (the JSON field or header it came from),
// the kind, the bound and the offending byte offset. The value itself is
// never echoed (it may be megabytes or carry control bytes). An empty v
// passes: presence is the caller's MISSING_FIELD check.
func Check(k Kind, field, v string) error {
	if v == "" {
		return nil
	}
	p := k.Inspect(v)
	if p == nil {
		return nil
	}
	details := map[string]any{"field": field, "kind": k.Name, "max_length": k.Max, "charset": k.Charset.String(), "length": len(v)}
	if p.Offset >= 0 {
		details["byte_offset"] = p.Offset
	}
	return domainerr.New("INVALID_REQUEST", field+" is not a valid "+k.Name+": it "+p.Reason, details)
}

// Field is one (field name, kind, value) to check.
type Field struct {
	Name  string
	Kind  Kind
	Value string
}

// CheckAll checks fields in order and returns the first refusal.
func CheckAll(fields ...Field) error {
	for _, f := range fields {
		if err := Check(f.Kind, f.Name, f.Value); err != nil {
			return err
		}
	}
	return nil
}

// Truncate bounds s to max bytes for storage or logs, marking a cut with
// "...[+N bytes]" (the marker counts within max). Control and non-ASCII
// bytes are kept as they are; the caller decides whether s needs quoting.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	marker := func(n int) string { return fmt.Sprintf("...[+%d bytes]", n) }
	keep := max - len(marker(len(s)))
	if keep < 0 {
		keep = 0
	}
	return s[:keep] + marker(len(s)-keep)
}

// InNamespace reports whether txid lies in bank's txid namespace: it
// starts with the bank_id and '-' and has something after it
// (docs/gateway.md "Identifiers": a client-chosen txid is namespaced by
// its payer, so it can never collide with another payer's transfer).
// BankID excludes '-', so no namespace is a prefix of another.
func InNamespace(txid, bankID string) bool {
	return bankID != "" && strings.HasPrefix(txid, bankID+"-") && len(txid) > len(bankID)+1
}
