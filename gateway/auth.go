package gateway

import (
	"context"
	"net"
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
// Headers such as Origin prove nothing. The one exception is
// AllowUnauthenticatedUI, explicitly on: a same-origin request without
// credentials, from a loopback peer, whose Host is one of the UI hosts,
// passes as a read-only operator (GET and HEAD only) and is logged
// (http.unauthenticated_ui_access). No credentials (or a UI request that
// fails those conditions) is 401.
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
			if why := s.uiRefusal(r); why != "" {
				loggerFrom(r).WarnContext(r.Context(), "http.unauthenticated_ui_refused", "method", r.Method, "path", r.URL.Path,
					"remote_addr", r.RemoteAddr, "reason", why)
				writeError(w, r, domainerr.New("UNAUTHORIZED", "credentials are required (X-Api-Key or Authorization: Bearer): "+why, nil))
				return
			}
			loggerFrom(r).WarnContext(r.Context(), "http.unauthenticated_ui_access", "method", r.Method, "path", r.URL.Path,
				"remote_addr", r.RemoteAddr, "note", "ZC_ALLOW_UNAUTHENTICATED_UI is on: this deployment exposes read-only /api to local browsers without credentials")
			p, ok = signing.Principal{Scope: signing.ScopeOperator, Name: unauthenticatedUI}, true
		}
		if !ok {
			writeError(w, r, domainerr.New("UNAUTHORIZED", "credentials are required (X-Api-Key or Authorization: Bearer)", nil))
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// uiRefusal says why a same-origin credential-less request may not use
// the unauthenticated UI ("" when it may): the peer must be loopback, the
// Host one of the configured UI hosts (a DNS-rebinding page sends its own
// name), and the method a read.
func (s *Server) uiRefusal(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return "the unauthenticated UI serves loopback peers only"
	}
	if hosts := s.uiHosts.Load(); hosts == nil || !(*hosts)[strings.ToLower(r.Host)] {
		return "the Host header is not this node's UI address"
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return "the unauthenticated UI is read-only"
	}
	return ""
}

func (s *Server) setUIHosts(hosts []string) {
	m := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		m[strings.ToLower(h)] = true
	}
	s.uiHosts.Store(&m)
}

// loopbackHosts are the Host values a local browser sends to a listener
// at addr: localhost, 127.0.0.1 and [::1] with its port, when addr is a
// loopback or wildcard address; nothing otherwise (the UI then never
// passes, since its peers must be loopback anyway).
func loopbackHosts(addr net.Addr) []string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !(ip.IsLoopback() || ip.IsUnspecified()) {
		return nil
	}
	return []string{net.JoinHostPort("localhost", port), net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}
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

// operatorOnly refuses a caller without the operator scope: it is
// authenticated (perimeter ran first), so the answer is 403
// CROSS_PARTICIPANT_SCOPE (authenticated, not allowed), never 401.
func (s *Server) operatorOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p := principalFrom(r); p.Scope != signing.ScopeOperator {
			writeError(w, r, domainerr.New("CROSS_PARTICIPANT_SCOPE", "this route needs the operator scope",
				map[string]any{"scope": p.Scope, "required_scope": signing.ScopeOperator}))
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
