package gateway

import (
	"context"
	"net/http"
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/signing"
)

// HeaderCronSecret carries the operator/cron secret (spec 004 内部API).
const HeaderCronSecret = "X-Cron-Secret"

type principalKey struct{}

func principalFrom(r *http.Request) signing.Principal {
	p, _ := r.Context().Value(principalKey{}).(signing.Principal)
	return p
}

// unauthenticatedUI names the principal of a credential-less request let
// through by AllowUnauthenticatedUI.
const unauthenticatedUI = "unauthenticated-ui"

// perimeter authenticates an /api caller by credentials only (spec 002
// §12.6.5): a valid X-Cron-Secret is the operator; otherwise an API key
// (X-Api-Key or Authorization: Bearer) names an operator or a participant.
// Headers such as Origin prove nothing, except when AllowUnauthenticatedUI
// is explicitly on: then a same-origin request without credentials passes
// as the operator and is logged (http.unauthenticated_ui_access).
func (s *Server) perimeter(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		now := s.clk.Now()
		var p signing.Principal
		ok := false
		if sec := r.Header.Get(HeaderCronSecret); sec != "" {
			if !signing.ConstantTimeEqual(sec, s.cfg.CronSecret) {
				s.recordRefusedCredential(r, credentialCron)
				writeError(w, r, domainerr.New("UNAUTHORIZED", "X-Cron-Secret is not valid", nil))
				return
			}
			p, ok = signing.Principal{Scope: signing.ScopeOperator, Name: "cron-secret"}, true
		} else if key := signing.Presented(r.Header); key != "" {
			if p, ok = s.cfg.APIKeys.Authenticate(key, now); !ok {
				s.recordRefusedCredential(r, credentialAPIKey)
				writeError(w, r, domainerr.New("UNAUTHORIZED", "API key is not valid", nil))
				return
			}
		} else if s.cfg.AllowUnauthenticatedUI && sameOrigin(r) {
			loggerFrom(r).WarnContext(r.Context(), "http.unauthenticated_ui_access", "method", r.Method, "path", r.URL.Path,
				"remote_addr", r.RemoteAddr, "note", "ZC_ALLOW_UNAUTHENTICATED_UI is on: this deployment exposes /api without credentials")
			p, ok = signing.Principal{Scope: signing.ScopeOperator, Name: unauthenticatedUI}, true
		}
		if !ok {
			writeError(w, r, domainerr.New("UNAUTHORIZED", "credentials are required (X-Api-Key or Authorization: Bearer)", nil))
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// sameOrigin is a browser courtesy only (never a second factor): the
// Origin header names this host, or the browser says same-origin.
func sameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	o := r.Header.Get("Origin")
	return o != "" && (o == "http://"+r.Host || o == "https://"+r.Host)
}

// operatorOnly refuses a participant on an operator route.
func (s *Server) operatorOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if principalFrom(r).Scope != signing.ScopeOperator {
			writeError(w, r, domainerr.New("UNAUTHORIZED", "this route needs the operator scope", map[string]any{"scope": signing.ScopeOperator}))
			return
		}
		next(w, r)
	}
}

// cron guards /internal/*: X-Cron-Secret compared in constant time with the
// configured secret; a missing header or an unset secret is refused
// (fail-closed, 403 like the spec's internal router).
func (s *Server) cron(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !signing.ConstantTimeEqual(r.Header.Get(HeaderCronSecret), s.cfg.CronSecret) {
			loggerFrom(r).WarnContext(r.Context(), "http.internal_refused", "path", r.URL.Path,
				"secret_configured", s.cfg.CronSecret != "", "header_present", r.Header.Get(HeaderCronSecret) != "")
			b := domainerr.JSON(domainerr.New("UNAUTHORIZED", "X-Cron-Secret is missing or not valid", nil), requestID(r))
			writeJSON(w, http.StatusForbidden, b)
			return
		}
		next(w, r)
	}
}

// purposeCodes is the closed set of X-Purpose-Code values (spec 004).
var purposeCodes = map[string]bool{"P01": true, "P02": true, "P03": true, "P04": true, "P05": true, "P06": true, "P07": true}

func validPurpose(p string) bool { return purposeCodes[strings.TrimSpace(p)] }
