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

// HTTPStatus is the status this error maps to: the category's status, or
// for a code the catalog returns directly over HTTP (e.g. 422
// DAILY_LIMIT_EXCEEDED) that code's fixed status.
func (e *Error) HTTPStatus() int {
	if s, ok := directStatus[e.Code]; ok && CategoryFromStatus(s) == e.Category {
		return s
	}
	return HTTPStatus(e.Category)
}

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

// directStatus holds the fixed HTTP status of the codes the catalog returns
// directly over HTTP (spec 004 "DomainError を経由しない reason_code").
var directStatus = map[string]int{}

// registerDirect registers codes returned directly with a fixed HTTP
// status; their category is derived from the status (CategoryFromStatus).
func registerDirect(status int, codes ...string) {
	register(CategoryFromStatus(status), codes...)
	for _, code := range codes {
		directStatus[code] = status
	}
}

// DirectStatus returns the fixed HTTP status of a code the catalog returns
// directly over HTTP, and false for a code whose status follows its
// category.
func DirectStatus(code string) (int, bool) {
	s, ok := directStatus[code]
	return s, ok
}

// StatusOf is the HTTP status of a reason code: its fixed direct status,
// else its category's status (500 for an unregistered code).
func StatusOf(code string) int {
	if s, ok := directStatus[code]; ok {
		return s
	}
	return HTTPStatus(CategoryOf(code))
}

// InternalReasonCode is the reason_code JSON reports for an error that is
// not a DomainError. It is the category name, not a catalog code: such an
// error is a bug (spec 004: INTERNAL = 未分類例外・実装漏れ) and its text is
// not shown to the caller.
const InternalReasonCode = "INTERNAL"

// Body is the error body every endpoint returns on failure (spec 004 エラー
// カタログ): {error, reason_code, category, details, request_id}. Status is
// the HTTP status to send with it and is not part of the JSON.
type Body struct {
	Status     int            `json:"-"`
	Error      string         `json:"error"`
	ReasonCode string         `json:"reason_code"`
	Category   Category       `json:"category"`
	Details    map[string]any `json:"details"`
	RequestID  string         `json:"request_id"`
}

// JSON builds the catalog's error body for err. A DomainError contributes
// its message, code, category and details; any other error becomes an
// INTERNAL 500 whose message does not reveal the error's text. Details is
// never null in the JSON.
func JSON(err error, requestID string) Body {
	de, ok := As(err)
	if !ok {
		return Body{
			Status:     HTTPStatus(Internal),
			Error:      "internal error",
			ReasonCode: InternalReasonCode,
			Category:   Internal,
			Details:    map[string]any{},
			RequestID:  requestID,
		}
	}
	details := de.Details
	if details == nil {
		details = map[string]any{}
	}
	msg := de.Message
	if msg == "" {
		msg = de.Code
	}
	return Body{
		Status:     de.HTTPStatus(),
		Error:      msg,
		ReasonCode: de.Code,
		Category:   de.Category,
		Details:    details,
		RequestID:  requestID,
	}
}
