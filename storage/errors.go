package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
)

// ErrNotExist reports a missing object or dataset root. errors.Is(err,
// fs.ErrNotExist) holds too, so callers that already handle missing local
// files handle missing remote objects the same way.
var ErrNotExist = errors.New("storage: object does not exist")

// ErrChanged reports that an object changed (size or modification time) while
// a reader was resuming it after a transient error: the bytes already served
// and the bytes still to come would belong to different versions.
var ErrChanged = errors.New("storage: object changed during read")

// ErrUnsupported reports an operation the backend cannot do, such as List on
// an HTTP server that serves no directory index.
var ErrUnsupported = errors.New("storage: operation not supported")

// Error is every failure of an operation on one object or prefix: the
// operation, the object's URL (never with credentials or query parameters),
// the byte offset where it happened (-1 when no offset applies), and the
// cause.
type Error struct {
	Op     string // "open", "read", "list", "stat"
	URL    string
	Offset int64
	Err    error
}

func (e *Error) Error() string {
	s := "storage: " + e.Op + " " + e.URL
	if e.Offset >= 0 {
		s += " at offset " + strconv.FormatInt(e.Offset, 10)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, fs.ErrNotExist) hold for ErrNotExist.
func (e *Error) Is(target error) bool {
	return target == fs.ErrNotExist && errors.Is(e.Err, ErrNotExist)
}

func newError(op, url string, off int64, err error) error {
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	return &Error{Op: op, URL: url, Offset: off, Err: err}
}

// notExistError is a backend's not-found error, reported as ErrNotExist.
type notExistError struct{ err error }

func (e *notExistError) Error() string { return "object does not exist" }
func (e *notExistError) Unwrap() error { return e.err }
func (e *notExistError) Is(target error) bool {
	return target == ErrNotExist || target == fs.ErrNotExist
}

// statusError is an HTTP response that was not what the request asked for.
type statusError struct {
	code   int
	status string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %s", e.status) }

// HTTPStatusCode matches the interface the AWS SDK's response errors have,
// so one classifier handles both.
func (e *statusError) HTTPStatusCode() int { return e.code }
