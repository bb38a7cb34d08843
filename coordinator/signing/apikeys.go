package signing

import (
	"net/http"
	"strings"
	"time"
)

// Scopes of an /api principal (spec 004 照会の認可: operator and
// participant scopes are kept apart).
const (
	ScopeOperator    = "OPERATOR"
	ScopeParticipant = "PARTICIPANT"
)

// Principal is who an API key authenticates.
type Principal struct {
	Scope  string // OPERATOR | PARTICIPANT
	BankID string // PARTICIPANT only
	Name   string // for logs
}

// APIKey is one principal's key with its rotation window (spec 002
// §12.6.4 applies to X-Api-Key / Authorization: Bearer as to HMAC).
type APIKey struct {
	Principal Principal
	Secret    *Rotating
}

// APIKeys authenticates /api callers.
type APIKeys struct {
	Keys []APIKey
}

// Presented returns the credential a request carries: X-Api-Key, or the
// token of "Authorization: Bearer <token>".
func Presented(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// Authenticate returns the principal whose key matches presented. Every
// configured key is compared (constant time each), so the time taken does
// not depend on which key, if any, matched.
func (a *APIKeys) Authenticate(presented string, now time.Time) (Principal, bool) {
	var found Principal
	ok := false
	for _, k := range a.Keys {
		if k.Secret.Match([]byte(presented), now) && !ok {
			found, ok = k.Principal, true
		}
	}
	return found, ok
}
