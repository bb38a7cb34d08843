package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/strictjson"
)

// MaxBodyBytes bounds an ingress request body.
const MaxBodyBytes = 1 << 20

// Handler serves POST /bank/{bank_id}/zc-ingress/{command} for this bank:
// JSON in, JSON out, errors in the catalog shape {error, reason_code,
// category, details, request_id} with the category's HTTP status. Another
// bank_id is 404 PARTICIPANT_NOT_FOUND. Signature verification (X-ZC-*)
// is the gateway's job in front of this handler.
//
// A request that carries a signing.NonceClaim (the gateway's verifier
// hands one to a signing.NonceConsumer, which this handler is) has its
// nonce consumed in the adapter's database: in the command's own
// transaction for a command that runs in one (foldsNonce), else in a
// transaction of its own before the command runs or before an error is
// answered.
func (a *Adapter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /bank/{bank_id}/zc-ingress/{command}", a.serve)
	return nonceConsumer{mux}
}

// nonceConsumer marks the adapter's ingress handlers as consuming the
// nonce claims their requests carry (signing.NonceConsumer); the mux
// stays reachable (its Handler method names the route a request takes).
type nonceConsumer struct{ *http.ServeMux }

func (nonceConsumer) ConsumesNonceClaims() {}

// foldsNonce lists the commands whose first write is once's transaction,
// which consumes the request's nonce claim with the command. Any other
// command's claim is consumed before it runs.
var foldsNonce = map[bankapi.Command]bool{
	bankapi.ReserveFunds: true, bankapi.ExecuteDebit: true, bankapi.ExecuteCredit: true,
	bankapi.ReleaseReserve: true, bankapi.LegReadyCheck: true, bankapi.AuthorityCheck: true,
	bankapi.AccountVerify: true, bankapi.CreditNotify: true, bankapi.RTPNotify: true,
	bankapi.DebitSettled: true, bankapi.Compensate: true,
}

// Mux serves the ingress of several banks on one listener, routing by
// {bank_id}; an unknown bank is 404 PARTICIPANT_NOT_FOUND.
func Mux(adapters ...*Adapter) http.Handler {
	byBank := make(map[string]*Adapter, len(adapters))
	for _, a := range adapters {
		byBank[a.bank] = a
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /bank/{bank_id}/zc-ingress/{command}", func(w http.ResponseWriter, r *http.Request) {
		bank := r.PathValue("bank_id")
		a, ok := byBank[bank]
		if !ok {
			writeError(w, "", domainerr.New("PARTICIPANT_NOT_FOUND", "no adapter serves bank "+bank,
				map[string]any{"bank_id": bank}))
			return
		}
		a.serve(w, r)
	})
	return nonceConsumer{mux}
}

func (a *Adapter) serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	claim := signing.NonceClaimFrom(ctx)
	// fail answers err once the nonce is consumed; a nonce that cannot be
	// consumed goes back to the verifier unanswered.
	fail := func(requestID string, status int, err error) {
		if claim.Settle(ctx, a.db) != nil {
			return
		}
		writeErrorBody(w, requestID, status, err)
	}
	if bank := r.PathValue("bank_id"); bank != a.bank {
		fail("", 0, domainerr.New("PARTICIPANT_NOT_FOUND", "this adapter does not serve bank "+bank,
			map[string]any{"bank_id": bank}))
		return
	}
	cmd := bankapi.Command(r.PathValue("command"))
	req, ok := bankapi.NewRequest(cmd)
	if !ok {
		fail("", 0, domainerr.New("INVALID_REQUEST", "unknown ingress command "+string(cmd),
			map[string]any{"command": string(cmd)}))
		return
	}
	if err := strictjson.CheckContentType(r.Header.Get("Content-Type")); err != nil {
		fail("", http.StatusUnsupportedMediaType, err)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		fail("", 0, domainerr.Wrap("INVALID_REQUEST", err, "cannot read request body", map[string]any{"command": string(cmd)}))
		return
	}
	if len(body) > MaxBodyBytes {
		fail("", 0, domainerr.New("INVALID_REQUEST", fmt.Sprintf("request body exceeds %d bytes", MaxBodyBytes),
			map[string]any{"command": string(cmd)}))
		return
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	// Strict JSON (duplicate keys, case-only key matches, invalid UTF-8,
	// trailing data); unknown fields stay accepted, as before.
	if err := strictjson.Decode(body, req, strictjson.Options{}); err != nil {
		if de, ok := domainerr.As(err); ok {
			de.Details["command"] = string(cmd)
		}
		fail("", 0, err)
		return
	}
	if !foldsNonce[cmd] && claim.Settle(ctx, a.db) != nil {
		return
	}
	resp, err := a.Dispatch(ctx, req)
	if err != nil {
		if domainerr.Has(err, "SIGNATURE_REPLAYED") && !claim.IsUsed() {
			claim.Refuse(err)
			return
		}
		fail(req.RequestID(), 0, err)
		return
	}
	if claim.Settle(ctx, a.db) != nil { // a no-op: once consumed it with the command
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(resp)
}

// Dispatch runs one decoded ingress request and returns its response body.
func (a *Adapter) Dispatch(ctx context.Context, req bankapi.Request) (any, error) {
	switch r := req.(type) {
	case *bankapi.ReserveFundsRequest:
		return a.ReserveFunds(ctx, *r)
	case *bankapi.ExecuteDebitRequest:
		return a.ExecuteDebit(ctx, *r)
	case *bankapi.ExecuteCreditRequest:
		return a.ExecuteCredit(ctx, *r)
	case *bankapi.ReleaseReserveRequest:
		return a.ReleaseReserve(ctx, *r)
	case *bankapi.LegReadyCheckRequest:
		return a.LegReadyCheck(ctx, *r)
	case *bankapi.AuthorityCheckRequest:
		return a.AuthorityCheck(ctx, *r)
	case *bankapi.NameCheckRequest:
		return a.NameCheck(ctx, *r)
	case *bankapi.AccountVerifyRequest:
		return a.AccountVerify(ctx, *r)
	case *bankapi.CreditNotifyRequest:
		return a.CreditNotify(ctx, *r)
	case *bankapi.RTPNotifyRequest:
		return a.RTPNotify(ctx, *r)
	case *bankapi.DebitSettledRequest:
		return a.DebitSettled(ctx, *r)
	case *bankapi.InitializeBankRequest:
		return a.InitializeBank(ctx, *r)
	case *bankapi.CleanupBankRequest:
		return a.CleanupBank(ctx, *r)
	case *bankapi.CompensateRequest:
		return a.Compensate(ctx, *r)
	}
	return nil, domainerr.New("INVALID_REQUEST", fmt.Sprintf("unsupported request type %T", req), nil)
}

// writeError writes err in the catalog shape. Any other error (storage,
// transport) is a retryable BANK_ERROR whose text is not exposed.
func writeError(w http.ResponseWriter, requestID string, err error) {
	writeErrorBody(w, requestID, 0, err)
}

func writeErrorBody(w http.ResponseWriter, requestID string, status int, err error) {
	de, ok := domainerr.As(err)
	if !ok {
		de = domainerr.New("BANK_ERROR", "bank adapter failed; retry", nil)
	}
	if status == 0 {
		status = de.HTTPStatus()
	}
	details := de.Details
	if details == nil {
		details = map[string]any{}
	}
	body := bankapi.ErrorBody{Error: de.Message, ReasonCode: de.Code, Category: de.Category, Details: details, RequestID: requestID}
	w.Header().Set("Content-Type", "application/json")
	if de.Retryable() {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
