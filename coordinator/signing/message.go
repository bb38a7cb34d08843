package signing

import (
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// Header names of the ZC egress signature (spec 004 ZC→Bank Ingress API).
const (
	HeaderKeyID     = "X-ZC-Key-Id"
	HeaderNonce     = "X-ZC-Sig-Nonce"
	HeaderTime      = "X-ZC-Sig-Time"
	HeaderSignature = "X-ZC-Signature"
)

// Header names of a participant's query signature (spec 004 照会の認可).
const (
	HeaderParticipantKeyID     = "X-Participant-Key-Id"
	HeaderParticipantNonce     = "X-Participant-Sig-Nonce"
	HeaderParticipantTime      = "X-Participant-Sig-Time"
	HeaderParticipantSignature = "X-Participant-Signature"
)

// Envelope is what an HTTP request signature covers. Body is the request
// body (nil or empty for none). The signed fields are the envelope's own
// members plus every leaf of the body (LeafPointers), listed in ascending
// order in signed_fields, which is itself signed: a field added to, removed
// from or moved within the body changes the signed bytes, so no business
// field can travel unsigned (spec 002 §12.6.1 rule 2).
type Envelope struct {
	Method  string
	Path    string
	KeyID   string // "" on the HMAC path
	Nonce   string
	SigTime string // RFC3339
	Body    []byte
}

// Message returns the FIXED-canonical bytes of the envelope and the signed
// field list (JSON Pointers into the envelope document
// {"body":…,"key_id":…,"method":…,"nonce":…,"path":…,"sig_time":…,
// "signed_fields":[…]}).
func (e Envelope) Message() ([]byte, []string, error) {
	var body any = map[string]any{}
	if len(e.Body) > 0 {
		var err error
		if body, err = Decode(e.Body); err != nil {
			return nil, nil, err
		}
	}
	var bodyFields []string
	if m, ok := body.(map[string]any); !ok || len(m) > 0 {
		for _, p := range LeafPointers(body) {
			bodyFields = append(bodyFields, "/body"+p)
		}
	}
	fields := append(bodyFields, "/key_id", "/method", "/nonce", "/path", "/sig_time", "/signed_fields")
	listed := make([]any, len(fields))
	for i, f := range fields {
		listed[i] = f
	}
	doc := map[string]any{
		"body": body, "key_id": e.KeyID, "method": e.Method, "nonce": e.Nonce,
		"path": e.Path, "sig_time": e.SigTime, "signed_fields": listed,
	}
	msg, err := Canonical(doc, fields)
	if err != nil {
		return nil, nil, err
	}
	return msg, fields, nil
}

// QueryPayload is the 4-field payload a participant signs for a query
// (spec 004 照会の認可: method, path, bank_id, purpose_code), plus the
// nonce and signing time that make it single-use. Canonical order is the
// ascending order of the member names.
type QueryPayload struct {
	Method, Path, BankID, PurposeCode, Nonce, SigTime string
}

// Message returns the FIXED-canonical bytes of the payload.
func (q QueryPayload) Message() []byte {
	doc := map[string]any{"bank_id": q.BankID, "method": q.Method, "nonce": q.Nonce,
		"path": q.Path, "purpose_code": q.PurposeCode, "sig_time": q.SigTime}
	msg, err := Canonical(doc, []string{"/bank_id", "/method", "/nonce", "/path", "/purpose_code", "/sig_time"})
	if err != nil { // strings only: cannot fail
		panic(domainerr.Wrap("INVARIANT_VIOLATION", err, "query payload canonicalization", nil))
	}
	return msg
}
