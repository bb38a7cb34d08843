package gateway

import (
	"bytes"
	"io"
	"net/http"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// ingress serves POST /bank/{bank_id}/zc-ingress/{command}: the body is
// read once, the ZC signature verified over exactly those bytes (Ed25519
// when X-ZC-Key-Id is present, else the HMAC fallback), and only then is
// the request handed to that bank's adapter. Spec 004: every verification
// failure is 401 INVALID_SIGNATURE (details.cause names the check that
// failed), an unsigned HMAC-path request 401 MISSING_SIGNATURE.
func (s *Server) ingress(w http.ResponseWriter, r *http.Request) {
	bank := r.PathValue("bank_id")
	h, ok := s.cfg.Banks[bank]
	if !ok {
		writeError(w, r, domainerr.New("PARTICIPANT_NOT_FOUND", "no adapter serves bank "+bank, map[string]any{"bank_id": bank}))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, adapter.MaxBodyBytes+1))
	if err != nil || len(body) > adapter.MaxBodyBytes {
		writeError(w, r, domainerr.New("INVALID_REQUEST", "cannot read the ingress body", map[string]any{"bank_id": bank}))
		return
	}
	keyID, err := s.cfg.Ingress.VerifyRequest(r.Context(), r.Method, r.URL.Path, r.Header, body)
	if err != nil {
		code := domainerr.Code(err)
		s.metrics.signatureFailures.Add(1)
		loggerFrom(r).WarnContext(r.Context(), "ingress.signature_refused", "bank_id", bank, "command", r.PathValue("command"),
			"key_id", keyID, "cause", code)
		if code == "MISSING_SIGNATURE" {
			writeError(w, r, err)
			return
		}
		if code == "" { // storage failure while checking: not the caller's fault
			writeError(w, r, err)
			return
		}
		writeError(w, r, domainerr.Wrap("INVALID_SIGNATURE", err, "signature verification failed",
			map[string]any{"cause": code, "key_id": keyID}))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	h.ServeHTTP(w, r)
}
