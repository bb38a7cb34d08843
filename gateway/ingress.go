package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/strictjson"
)

// ingress serves POST /bank/{bank_id}/zc-ingress/{command}. Spec 004:
// every verification failure is 401 INVALID_SIGNATURE (details.cause names
// the check that failed), an unsigned HMAC-path request 401
// MISSING_SIGNATURE. In order:
//  1. the signature headers, without the body (signing.CheckHeaders:
//     shape, signing time, key, owner, revocation at receive time);
//  2. Content-Type application/json, else 415;
//  3. a declared Content-Length above adapter.MaxBodyBytes is refused
//     unread;
//  4. a slot among MaxUnauthenticatedBodies bodies being read, else 503
//     RATE_LIMITED with Retry-After (the body cannot be authenticated
//     before it is read, so at most that many are held at once; the edge
//     bounds each read in time);
//  5. the body is read once and the signature verified over exactly those
//     bytes, then the slot is given back; the nonce is consumed here, or,
//     in front of an adapter (signing.NonceConsumer), by the adapter in
//     the command's own transaction before it answers;
//  6. only then is the bank looked up: a request for a bank no adapter
//     serves is refused exactly like any other unverified request until
//     its signature verified (same status, same body), so the ingress
//     tells an unauthenticated caller nothing about which banks exist.
func (s *Server) ingress(w http.ResponseWriter, r *http.Request) {
	bank := r.PathValue("bank_id")
	pending, err := s.cfg.Ingress.CheckHeaders(r.Context(), r.Header)
	if err != nil {
		s.refuseSignature(w, r, pending.KeyID(), err)
		return
	}
	if err := strictjson.CheckContentType(r.Header.Get("Content-Type")); err != nil {
		writeErrorStatus(w, r, http.StatusUnsupportedMediaType, err)
		return
	}
	if r.ContentLength > adapter.MaxBodyBytes {
		writeError(w, r, domainerr.New("INVALID_REQUEST", fmt.Sprintf("request body exceeds %d bytes", adapter.MaxBodyBytes),
			map[string]any{"content_length": r.ContentLength}))
		return
	}
	if !s.takeBodySlot() {
		s.metrics.bodiesShed.Add(1)
		loggerFrom(r).WarnContext(r.Context(), "ingress.body_shed", "slots", cap(s.bodySlots))
		writeErrorStatus(w, r, http.StatusServiceUnavailable, domainerr.New("RATE_LIMITED",
			"too many unauthenticated request bodies are being read; retry", map[string]any{"retry_after_seconds": 1}))
		return
	}
	h, ok := s.cfg.Banks[bank]
	consumer, folds := h.(signing.NonceConsumer)
	body, claim, readErr, verifyErr := s.readAndVerify(r, pending, folds)
	if readErr != nil {
		writeError(w, r, readErr)
		return
	}
	if verifyErr != nil {
		s.refuseSignature(w, r, pending.KeyID(), verifyErr)
		return
	}
	if !ok {
		writeError(w, r, domainerr.New("PARTICIPANT_NOT_FOUND", "no adapter serves bank "+bank, map[string]any{"bank_id": bank}))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if !folds {
		h.ServeHTTP(w, r)
		return
	}
	// The adapter consumes the nonce in the command's own transaction
	// (signing.NonceClaim); a nonce it finds used, or cannot store, comes
	// back here unanswered and is refused like any other signature.
	consumer.ServeHTTP(w, r.WithContext(signing.WithNonceClaim(r.Context(), claim)))
	if err := claim.Refused(); err != nil {
		s.refuseSignature(w, r, pending.KeyID(), err)
	}
}

func (s *Server) takeBodySlot() bool {
	select {
	case s.bodySlots <- struct{}{}:
		return true
	default:
		return false
	}
}

// readAndVerify reads the body and verifies its signature while holding
// a body slot, which it gives back before returning.
// With deferNonce the nonce is not consumed: the claim goes to the
// handler (signing.NonceConsumer).
func (s *Server) readAndVerify(r *http.Request, p signing.Pending, deferNonce bool) (body []byte, claim *signing.NonceClaim, readErr, verifyErr error) {
	defer func() { <-s.bodySlots }()
	body, readErr = readLimited(r.Body, r.ContentLength, adapter.MaxBodyBytes)
	if readErr != nil {
		return nil, nil, readErr, nil
	}
	if deferNonce {
		claim, verifyErr = p.VerifyDeferred(r.Method, r.URL.Path, body)
		return body, claim, nil, verifyErr
	}
	return body, nil, nil, p.Verify(r.Context(), r.Method, r.URL.Path, body)
}

// readLimited reads a body of at most max bytes into one buffer sized
// from the declared length (no doubling growth for a declared body); a
// longer body or a read failure (the edge's deadline included) is
// INVALID_REQUEST.
func readLimited(body io.Reader, declared int64, max int) ([]byte, error) {
	var buf bytes.Buffer
	if declared > 0 && declared <= int64(max) {
		buf.Grow(int(declared) + 1)
	}
	_, err := buf.ReadFrom(io.LimitReader(body, int64(max)+1))
	if err != nil {
		return nil, domainerr.Wrap("INVALID_REQUEST", err, "cannot read the request body", nil)
	}
	if buf.Len() > max {
		return nil, domainerr.New("INVALID_REQUEST", fmt.Sprintf("request body exceeds %d bytes", max), nil)
	}
	return buf.Bytes(), nil
}

// refuseSignature answers a failed signature check: MISSING_SIGNATURE as
// is, any other verification failure 401 INVALID_SIGNATURE with the
// specific code as details.cause; a failure of storage while checking is
// not the caller's fault and keeps its own status.
func (s *Server) refuseSignature(w http.ResponseWriter, r *http.Request, keyID string, err error) {
	code := domainerr.Code(err)
	s.metrics.signatureFailures.Add(1)
	loggerFrom(r).WarnContext(r.Context(), "ingress.signature_refused", "bank_id", r.PathValue("bank_id"), "command", r.PathValue("command"),
		"key_id", keyID, "cause", code)
	if code == "MISSING_SIGNATURE" || code == "" {
		writeError(w, r, err)
		return
	}
	writeError(w, r, domainerr.Wrap("INVALID_SIGNATURE", err, "signature verification failed",
		map[string]any{"cause": code, "key_id": keyID}))
}
