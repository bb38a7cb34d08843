package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// Rotating is a shared secret with its rotation overlap window (spec 002
// §12.6.4): signing always uses Current; verification also accepts Previous
// until PreviousUntil (RFC3339), after which the clock closes the window
// without a redeploy. A Previous without a deadline, or with an unreadable
// one, is never accepted (fail-closed) and is logged as a warning.
type Rotating struct {
	Current       []byte
	Previous      []byte
	PreviousUntil string
	// Logger receives the warnings (nil: discard).
	Logger *slog.Logger
}

// previousOpen reports whether Previous may still be used at now.
func (r *Rotating) previousOpen(now time.Time) bool {
	if len(r.Previous) == 0 {
		return false
	}
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if r.PreviousUntil == "" {
		log.Warn("signing.previous_secret_refused", "reason", "no deadline: a previous secret without PREVIOUS_UNTIL is never accepted")
		return false
	}
	until, err := time.Parse(time.RFC3339Nano, r.PreviousUntil)
	if err != nil {
		log.Warn("signing.previous_secret_refused", "reason", "unreadable deadline", "previous_until", r.PreviousUntil)
		return false
	}
	return now.Before(until)
}

// MAC is HMAC-SHA256 of msg under Current.
func (r *Rotating) MAC(msg []byte) []byte {
	m := hmac.New(sha256.New, r.Current)
	m.Write(msg)
	return m.Sum(nil)
}

// VerifyMAC checks mac against Current and, while the window is open,
// Previous. Both comparisons always run, in constant time, so the timing
// does not tell which secret matched. A mismatch is INVALID_HMAC; a match
// only with Previous after its window is INVALID_HMAC with
// details.previous_window "closed".
func (r *Rotating) VerifyMAC(msg, mac []byte, now time.Time) error {
	if len(r.Current) == 0 {
		return domainerr.New("INVALID_HMAC", "no HMAC secret is configured", nil)
	}
	cur := hmac.Equal(r.MAC(msg), mac)
	prevMatch := false
	if len(r.Previous) > 0 {
		m := hmac.New(sha256.New, r.Previous)
		m.Write(msg)
		prevMatch = hmac.Equal(m.Sum(nil), mac)
	}
	open := r.previousOpen(now)
	if cur || (prevMatch && open) {
		return nil
	}
	if prevMatch {
		return domainerr.New("INVALID_HMAC", "signed with the previous secret outside its rotation window",
			map[string]any{"previous_window": "closed"})
	}
	return domainerr.New("INVALID_HMAC", "HMAC signature does not match", nil)
}

// Match compares a presented bearer value (API key, cron secret) with
// Current and, while the window is open, Previous, in constant time and
// with both comparisons always made. An empty presented value or an empty
// Current never matches (fail-closed).
func (r *Rotating) Match(presented []byte, now time.Time) bool {
	if len(presented) == 0 || len(r.Current) == 0 {
		return false
	}
	p := sha256.Sum256(presented)
	c := sha256.Sum256(r.Current)
	cur := subtle.ConstantTimeCompare(p[:], c[:]) == 1
	prev := false
	if len(r.Previous) > 0 {
		q := sha256.Sum256(r.Previous)
		prev = subtle.ConstantTimeCompare(p[:], q[:]) == 1
	}
	return cur || (prev && r.previousOpen(now))
}

// ConstantTimeEqual compares a presented secret with the configured one in
// constant time; an empty configured or presented secret never matches
// (spec 004 internal API: missing header and unset secret are both refused).
func ConstantTimeEqual(presented, configured string) bool {
	if presented == "" || configured == "" {
		return false
	}
	p := sha256.Sum256([]byte(presented))
	c := sha256.Sum256([]byte(configured))
	return subtle.ConstantTimeCompare(p[:], c[:]) == 1
}
