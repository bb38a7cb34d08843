package conditions

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Attestation verified results.
const (
	ResultPass = "PASS"
	ResultFail = "FAIL"
)

// OwnerAttester is KeyRegistry.owner_type of an external attester's key.
const OwnerAttester = "ATTESTER"

// Attestation is one signed statement of an external attester about a
// subject (an HTLC, a transfer, a GTID ...) under a template. ZC keeps
// statement_hash and verified_result only, never the statement itself
// (spec 000 §11.2-b).
type Attestation struct {
	AttestationID  string `json:"attestation_id"`
	TemplateID     string `json:"template_id"`
	Subject        string `json:"subject"`
	StatementHash  string `json:"statement_hash"`  // SHA-256 hex of the statement
	VerifiedResult string `json:"verified_result"` // PASS | FAIL
	KeyID          string `json:"key_id"`
	Nonce          string `json:"nonce"`
	OccurredAt     string `json:"occurred_at"` // RFC3339: when the attester signed
	// Signature is base64 (std) Ed25519 over SignedBytes.
	Signature string `json:"signature"`
}

// SignedPointers are the members an attestation signature covers, in
// order, canonicalised with the FIXED rule of spec 002 §12.6.2
// (signing.Canonical).
var SignedPointers = []string{"/attestation_id", "/template_id", "/subject", "/statement_hash", "/verified_result", "/key_id", "/nonce", "/occurred_at"}

// SignedBytes is what the attester signs.
func (a Attestation) SignedBytes() ([]byte, error) {
	doc := map[string]any{"attestation_id": a.AttestationID, "template_id": a.TemplateID, "subject": a.Subject,
		"statement_hash": a.StatementHash, "verified_result": a.VerifiedResult, "key_id": a.KeyID, "nonce": a.Nonce,
		"occurred_at": a.OccurredAt}
	return signing.Canonical(doc, SignedPointers)
}

// Sign fills Signature with priv (for attesters and tests).
func (a *Attestation) Sign(priv ed25519.PrivateKey) error {
	msg, err := a.SignedBytes()
	if err != nil {
		return err
	}
	a.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, msg))
	return nil
}

// Attestations records attestations (recordAttestation of spec 000
// §11.2-b) in the Attestation table.
type Attestations struct {
	db   *store.DB
	clk  clock.Clock
	keys *signing.Registry
}

// NewAttestations returns Attestations on the coordinator database (clk
// nil: system clock).
func NewAttestations(db *store.DB, clk clock.Clock) *Attestations {
	if clk == nil {
		clk = clock.System{}
	}
	return &Attestations{db: db, clk: clk, keys: signing.NewRegistry(db, clk)}
}

func attInvalid(field, why string, v any) error {
	return domainerr.New("ATTESTATION_INVALID", field+": "+why, map[string]any{"field": field, "value": v})
}

// Verify runs every check of Record except the insert, at now: the form
// (ATTESTATION_INVALID, MISSING_FIELD), the template (TEMPLATE_NOT_WHITELISTED;
// a ledger-predicate template takes no attester: ATTESTER_UNAUTHORIZED),
// the key (KEY_NOT_FOUND, KEY_REVOKED, KEY_EXPIRED; owner_type ATTESTER and
// owner_ref in the template's scope, else ATTESTER_UNAUTHORIZED), the
// signature (EXTERNAL_SIGNATURE_INVALID), the signing time (TIMESTAMP_SKEW
// when ahead of now by more than PR-SIGNATURE-SKEW) and freshness
// (ATTESTATION_EXPIRED after the template's TTL). It returns the key's
// operator (owner_ref).
func (as *Attestations) Verify(ctx context.Context, a Attestation, now time.Time) (operator string, err error) {
	for _, f := range []struct{ name, v string }{{"attestation_id", a.AttestationID}, {"template_id", a.TemplateID},
		{"subject", a.Subject}, {"key_id", a.KeyID}, {"nonce", a.Nonce}, {"occurred_at", a.OccurredAt}, {"signature", a.Signature}} {
		if f.v == "" {
			return "", domainerr.New("MISSING_FIELD", f.name+" is required", map[string]any{"field": f.name})
		}
	}
	if err := ident.CheckAll(ident.Field{Name: "attestation_id", Kind: ident.ClientRef, Value: a.AttestationID},
		ident.Field{Name: "subject", Kind: ident.ClientRef, Value: a.Subject}, ident.Field{Name: "nonce", Kind: ident.ClientRef, Value: a.Nonce}); err != nil {
		return "", err
	}
	if b, err := hex.DecodeString(a.StatementHash); err != nil || len(b) != 32 || a.StatementHash != hex.EncodeToString(b) {
		return "", attInvalid("statement_hash", "must be SHA-256 in lower-case hex (64 digits)", a.StatementHash)
	}
	if a.VerifiedResult != ResultPass && a.VerifiedResult != ResultFail {
		return "", attInvalid("verified_result", "must be PASS or FAIL", a.VerifiedResult)
	}
	at, err := clock.ParseStamp(a.OccurredAt)
	if err != nil {
		return "", attInvalid("occurred_at", "must be RFC3339", a.OccurredAt)
	}
	var tpl Template
	err = as.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		tpl, err = GetTemplateTx(ctx, tx, a.TemplateID)
		return err
	})
	if err != nil {
		return "", err
	}
	if tpl.Status != TemplateActive {
		return "", notWhitelisted(a.TemplateID)
	}
	if tpl.LedgerPredicate != nil {
		return "", domainerr.New("ATTESTER_UNAUTHORIZED", "template "+a.TemplateID+" is a ledger predicate: ZC resolves it and no attester may sign it",
			map[string]any{"template_id": a.TemplateID})
	}
	key, err := as.keys.Get(ctx, a.KeyID)
	if err != nil {
		return "", err
	}
	if err := key.CheckUsableAt(at, now); err != nil {
		return "", err
	}
	if key.OwnerType != OwnerAttester || !slices.Contains(tpl.AllowedAttesterScope, key.OwnerRef) {
		return "", domainerr.New("ATTESTER_UNAUTHORIZED", "key "+a.KeyID+" is not an attester in the scope of template "+a.TemplateID,
			map[string]any{"key_id": a.KeyID, "owner_type": key.OwnerType, "owner_ref": key.OwnerRef, "template_id": a.TemplateID})
	}
	msg, err := a.SignedBytes()
	if err != nil {
		return "", err
	}
	sig, err := base64.StdEncoding.DecodeString(a.Signature)
	if err != nil || !ed25519.Verify(key.PublicKey, msg, sig) {
		return "", domainerr.New("EXTERNAL_SIGNATURE_INVALID", "the attestation signature does not verify with key "+a.KeyID,
			map[string]any{"key_id": a.KeyID, "attestation_id": a.AttestationID})
	}
	skew := params.DefaultSignatureSkew
	if err := as.db.Read(ctx, func(tx *store.Tx) error {
		v, err := params.GetTx(ctx, tx, params.SignatureClockSkew)
		if err == nil {
			skew = time.Duration(v) * time.Second
		}
		return err
	}); err != nil {
		return "", err
	}
	if at.Sub(now) > skew {
		return "", domainerr.New("TIMESTAMP_SKEW", "occurred_at is ahead of the coordinator's clock by more than the allowed skew",
			map[string]any{"field": "occurred_at", "occurred_at": a.OccurredAt, "now": clock.Stamp(now), "skew_seconds": int64(skew / time.Second)})
	}
	if now.Sub(at) > tpl.TTL() {
		return "", domainerr.New("ATTESTATION_EXPIRED", fmt.Sprintf("the attestation is older than the template's %s freshness", tpl.TTL()),
			map[string]any{"field": "occurred_at", "occurred_at": a.OccurredAt, "ttl_seconds": tpl.AttestationTTLSeconds})
	}
	return key.OwnerRef, nil
}

// Record verifies a (Verify) and stores it. A second use of (key_id,
// nonce), or of attestation_id, is SIGNATURE_REPLAYED: the insert is
// guarded by both unique keys, so racing deliveries of one attestation
// store it once.
func (as *Attestations) Record(ctx context.Context, a Attestation) error {
	now := as.clk.Now()
	operator, err := as.Verify(ctx, a, now)
	if err != nil {
		return err
	}
	return as.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO Attestation (attestation_id, template_id, subject, statement_hash, verified_result,
			key_id, attester_ref, nonce, occurred_at, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			a.AttestationID, a.TemplateID, a.Subject, a.StatementHash, a.VerifiedResult, a.KeyID, operator, a.Nonce,
			clock.Stamp(mustStamp(a.OccurredAt)), clock.Stamp(now))
		if err != nil {
			return fmt.Errorf("conditions: insert attestation %s: %w", a.AttestationID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domainerr.New("SIGNATURE_REPLAYED", "attestation "+a.AttestationID+" (or its key and nonce) was already recorded",
				map[string]any{"attestation_id": a.AttestationID, "key_id": a.KeyID, "nonce": a.Nonce})
		}
		return nil
	})
}

func mustStamp(s string) time.Time {
	t, _ := clock.ParseStamp(s) // checked by Verify
	return t
}

// QuorumResult is the distinct-operator quorum of one attestation leaf
// (spec 000 §11.2-c): the operators with a fresh PASS and with a fresh
// FAIL for (template, subject), and how many PASS operators are needed.
// Equivocated is a PASS and a FAIL for the same (template, subject):
// the leaf is then false (fail-closed).
type QuorumResult struct {
	Required    int      `json:"required"`
	Pass        []string `json:"pass_operators"`
	Fail        []string `json:"fail_operators"`
	Equivocated bool     `json:"equivocated"`
}

// QuorumTx counts the fresh attestations of (template, subject) at now,
// by operator (KeyRegistry.owner_ref, not key: two keys of one operator
// count once), keeping only operators still in the template's scope.
func QuorumTx(ctx context.Context, tx *store.Tx, tpl Template, subject string, now time.Time) (QuorumResult, error) {
	q := QuorumResult{Required: tpl.MinAttesterQuorum, Pass: []string{}, Fail: []string{}}
	since := clock.Stamp(now.Add(-tpl.TTL()))
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT attester_ref, verified_result FROM Attestation
		WHERE template_id = ? AND subject = ? AND occurred_at >= ? AND occurred_at <= ? ORDER BY attester_ref, verified_result`,
		tpl.TemplateID, subject, since, clock.Stamp(now.Add(params.DefaultSignatureSkew)))
	if err != nil {
		return q, fmt.Errorf("conditions: read attestations of %s/%s: %w", tpl.TemplateID, subject, err)
	}
	defer rows.Close()
	for rows.Next() {
		var op, res string
		if err := rows.Scan(&op, &res); err != nil {
			return q, fmt.Errorf("conditions: read attestations of %s/%s: %w", tpl.TemplateID, subject, err)
		}
		if !slices.Contains(tpl.AllowedAttesterScope, op) {
			continue
		}
		if res == ResultPass {
			q.Pass = append(q.Pass, op)
		} else {
			q.Fail = append(q.Fail, op)
		}
	}
	if err := rows.Err(); err != nil {
		return q, fmt.Errorf("conditions: read attestations of %s/%s: %w", tpl.TemplateID, subject, err)
	}
	q.Equivocated = len(q.Pass) > 0 && len(q.Fail) > 0
	return q, nil
}
