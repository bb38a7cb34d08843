package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/strictjson"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

type loggerKey struct{}

func loggerFrom(r *http.Request) *slog.Logger {
	if l, ok := r.Context().Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// validRequestID accepts a client id that is an ident.RequestID, so it
// cannot inject anything into headers or log lines.
func validRequestID(id string) bool { return ident.RequestID.Valid(id) }

// edge is the outermost handler: it fixes the request id (the client's
// X-Request-Id when it sent a usable one, else req-<uuid>), sets it on the
// response before anything is written, recovers panics into an INTERNAL
// catalog error, logs one http.request line and counts the request.
func (s *Server) edge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(HeaderRequestID)
		if !validRequestID(id) {
			id = zclog.NewRequestID()
		}
		r.Header.Set(HeaderRequestID, id)
		w.Header().Set(HeaderRequestID, id)
		s.boundBodyRead(w, r)
		log := zclog.WithRequest(s.log, id)
		ctx := context.WithValue(zclog.ContextWithRequestID(r.Context(), id), loggerKey{}, log)
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.ErrorContext(ctx, "http.panic", "panic", fmt.Sprint(p), "method", r.Method, "path", r.URL.Path)
				if rec.status == 0 {
					writeError(rec, r, domainerr.New("INVARIANT_VIOLATION", "the server failed while handling the request", nil))
				}
			}
			d := time.Since(start)
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			s.metrics.observe(r.Pattern, r.Method, status, d)
			log.InfoContext(ctx, "http.request", "method", r.Method, "path", r.URL.Path, "route", r.Pattern,
				"status", status, "duration_ms", float64(d.Microseconds())/1000)
		}()
		next.ServeHTTP(rec, r)
	})
}

// boundBodyRead bounds the time to read r's body: the connection's read
// deadline is set to BodyReadTimeout from now (the headers were just
// read). It does not reach a handler that runs long after its body was
// read: net/http clears the deadline when the body hits its end and it
// starts watching the connection. A body left unread stays bounded too:
// net/http discards at most 256 KiB of it under the same deadline, else
// closes the connection; the next request on the connection gets fresh
// deadlines. Network deadlines are wall-clock instants, not business time,
// so they do not go through Config.Clock.
func (s *Server) boundBodyRead(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	// Not a network connection (httptest recorder): nothing to bound.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout))
}

// jsonBody refuses a request whose Content-Type is not application/json
// (charset utf-8 allowed) with 415, before its body is read.
func (s *Server) jsonBody(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := strictjson.CheckContentType(r.Header.Get("Content-Type")); err != nil {
			writeErrorStatus(w, r, http.StatusUnsupportedMediaType, err)
			return
		}
		next(w, r)
	}
}
