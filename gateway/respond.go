package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// HeaderRequestID is the tracing header (spec 004 リクエストトレーシング).
const HeaderRequestID = "X-Request-Id"

func requestID(r *http.Request) string { return zclog.RequestIDFrom(r.Context()) }

// writeJSON writes v as the JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error","reason_code":"INTERNAL","category":"INTERNAL","details":{}}`)
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte("\n"))
}

// writeError writes err in the catalog shape {error, reason_code, category,
// details, request_id} with its HTTP status; request_id is the response's
// X-Request-Id.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	b := domainerr.JSON(err, requestID(r))
	if b.Status >= 500 {
		if de, ok := domainerr.As(err); !ok || de.Category == domainerr.Internal || de.Category == domainerr.Invariant {
			loggerFrom(r).ErrorContext(r.Context(), "http.internal_error", "error", err)
		}
	}
	if b.Category == domainerr.RateLimit || b.Category == domainerr.Downstream || b.Category == domainerr.Timeout {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, b.Status, b)
}

// writeErrorStatus writes err in the catalog shape with an HTTP status
// the category does not give (415 for a wrong media type, 503 when the
// edge sheds load); a retryable category gets Retry-After too.
func writeErrorStatus(w http.ResponseWriter, r *http.Request, status int, err error) {
	b := domainerr.JSON(err, requestID(r))
	if domainerr.Retryable(b.Category) {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, b)
}
