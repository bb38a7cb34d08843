// Package domainerr is the one error type that crosses every boundary of
// zcgw: HTTP responses, queue retry decisions, FinalityLog payloads and
// Cases all use the same reason_code and category (spec 000 ch. 2, 004
// error catalog). Every reason code is registered with its category in
// catalog.go; category alone decides the HTTP status and whether a queue
// consumer retries.
//
// It must not import any other zcgw package.
package domainerr

import (
	"errors"
	"fmt"
)

// Category classifies a failure; it is the single source of the HTTP
// status and of retryability.
type Category string

// The categories of the error catalog (spec 004).
const (
	Validation Category = "VALIDATION"
	Auth       Category = "AUTH"
	NotFound   Category = "NOT_FOUND"
	Conflict   Category = "CONFLICT"
	RateLimit  Category = "RATE_LIMIT"
	Invariant  Category = "INVARIANT"
	Internal   Category = "INTERNAL"
	Downstream Category = "DOWNSTREAM"
	Timeout    Category = "TIMEOUT"
)

// Categories lists every category in catalog order.
var Categories = []Category{Validation, Auth, NotFound, Conflict, RateLimit, Invariant, Internal, Downstream, Timeout}

// HTTPStatus maps a category to its HTTP status (spec 004: the table is
// the single source of truth). Unknown categories map to 500.
func HTTPStatus(c Category) int {
	switch c {
	case Validation:
		return 400
	case Auth:
		return 401
	case NotFound:
		return 404
	case Conflict:
		return 409
	case RateLimit:
		return 429
	case Downstream:
		return 502
	case Timeout:
		return 504
	default:
		return 500
	}
}

// Retryable reports whether a queue consumer may retry a failure of this
// category: only DOWNSTREAM, TIMEOUT and RATE_LIMIT are.
func Retryable(c Category) bool {
	return c == Downstream || c == Timeout || c == RateLimit
}

// CategoryFromStatus derives a category from an HTTP status, for codes
// returned directly over HTTP without a registered category (spec 004).
func CategoryFromStatus(status int) Category {
	switch {
	case status == 400 || status == 422:
		return Validation
	case status == 401 || status == 403:
		return Auth
	case status == 404:
		return NotFound
	case status == 409:
		return Conflict
	case status == 429:
		return RateLimit
	case status == 502 || status == 503:
		return Downstream
	case status == 504:
		return Timeout
	default:
		return Internal
	}
}

// Error is a DomainError: a registered reason code, its category, a
// message, optional details and an optional cause.
type Error struct {
	Code     string
	Category Category
	Message  string
	Details  map[string]any
	Cause    error
}

// New returns an Error for a registered reason code; its category comes
// from the registry (INTERNAL when the code is not registered, which a test
// forbids).
func New(code, message string, details map[string]any) *Error {
	return &Error{Code: code, Category: CategoryOf(code), Message: message, Details: details}
}

// Newf is New with a formatted message and no details.
func Newf(code, format string, args ...any) *Error {
	return New(code, fmt.Sprintf(format, args...), nil)
}

// Wrap returns an Error for code whose cause is err.
func Wrap(code string, err error, message string, details map[string]any) *Error {
	e := New(code, message, details)
	e.Cause = err
	return e
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is matches another *Error by reason code, so errors.Is(err,
// domainerr.New(code, "", nil)) and Has(err, code) agree.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// HTTPStatus is the status this error maps to.
func (e *Error) HTTPStatus() int { return HTTPStatus(e.Category) }

// Retryable reports whether this error's category may be retried.
func (e *Error) Retryable() bool { return Retryable(e.Category) }

// As returns the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var de *Error
	if errors.As(err, &de) {
		return de, true
	}
	return nil, false
}

// Code returns the reason code of the first *Error in err's chain, or "".
func Code(err error) string {
	if de, ok := As(err); ok {
		return de.Code
	}
	return ""
}

// Has reports whether err's chain holds a DomainError with this code.
func Has(err error, code string) bool {
	for err != nil {
		if de, ok := err.(*Error); ok && de.Code == code {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}

// ShouldRetry is the queue retry policy (spec 000 ch. 2): a DomainError is
// retried only when its category is retryable; any other error is retried.
func ShouldRetry(err error) bool {
	if de, ok := As(err); ok {
		return de.Retryable()
	}
	return err != nil
}

var registry = map[string]Category{}

// register adds codes to the catalog; catalog.go calls it from init.
func register(c Category, codes ...string) {
	for _, code := range codes {
		if prev, dup := registry[code]; dup && prev != c {
			panic(fmt.Sprintf("domainerr: %s registered as %s and %s", code, prev, c))
		}
		registry[code] = c
	}
}

// CategoryOf returns the registered category of a reason code, or INTERNAL.
func CategoryOf(code string) Category {
	if c, ok := registry[code]; ok {
		return c
	}
	return Internal
}

// Registered reports whether a reason code is in the catalog.
func Registered(code string) bool {
	_, ok := registry[code]
	return ok
}

// Codes returns every registered reason code with its category.
func Codes() map[string]Category {
	out := make(map[string]Category, len(registry))
	for k, v := range registry {
		out[k] = v
	}
	return out
}
