package bot

import (
	"errors"
	"fmt"
	"time"
)

// Error codes: machine-readable, stable, mapped to HTTP statuses by the
// HTTP layer alone.
const (
	EInvalid      = "invalid"      // malformed input
	ENotFound     = "not_found"    // unknown persona, request or target
	EUnauthorized = "unauthorized" // a signature that does not verify
	EStale        = "stale"        // a timestamp outside the replay window
	EConflict     = "conflict"     // the request is already decided
	ETooLarge     = "too_large"    // a body over the limit
	EUnavailable  = "unavailable"  // the store or a platform cannot be reached
	EInternal     = "internal"     // a bug; details are logged, not shown
	EForbidden    = "forbidden"    // a caller outside its scopes
	ERateLimited  = "rate_limited" // too many calls: try again later
)

// Error is the application error users see: a code and a message.
type Error struct {
	Code    string
	Message string
	// RetryAfter, on an ERateLimited error, is how long until the call
	// can succeed (the HTTP layer sends it as Retry-After).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the given code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err's *Error, or EInternal.
func ErrorCode(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the message of err's *Error, or a generic one so
// internal details are not shown to users.
func ErrorMessage(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Message
	}
	return "internal error"
}
