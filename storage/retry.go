package storage

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"
)

// errStalled is the cause of an attempt aborted by the stall check.
var errStalled = errors.New("stalled: the body delivered less than the minimum rate over the stall window")

// errTruncated is a body that ended before the bytes its range promised.
var errTruncated = errors.New("response body ended early")

var errNegativeOffset = errors.New("negative offset")

// transient reports whether err is worth retrying: network failures
// (connection refused or reset, broken pipe, timeouts, bodies cut short),
// HTTP 5xx, 408 and 429. Missing objects, denied access, bad requests and
// the caller's own cancellation are final.
func transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNotExist) || errors.Is(err, ErrChanged) {
		return false
	}
	if errors.Is(err, errStalled) || errors.Is(err, errTruncated) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, e) {
			return true
		}
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) {
		return retryableStatus(status.HTTPStatusCode())
	}
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		return retryableStatus(gerr.Code)
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return true
	}
	var operr *net.OpError
	if errors.As(err, &operr) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch gcerrors.Code(err) {
	case gcerrors.ResourceExhausted, gcerrors.DeadlineExceeded:
		return true
	}
	return false
}

func retryableStatus(code int) bool {
	return code >= 500 || code == 408 || code == 429
}

// retrier paces one streak of retries.
type retrier struct {
	p       RetryPolicy
	clk     clock
	need    int64     // bytes that end a streak (Options.stallFloor)
	got     int64     // bytes delivered since the streak began
	start   time.Time // first failure of the streak; zero when none
	attempt int
}

// progress counts n bytes delivered: once the streak has seen need bytes
// since it began, it ends (the deadline restarts at the next failure).
func (r *retrier) progress(n int) {
	if r.start.IsZero() {
		return
	}
	if r.got += int64(n); r.got >= r.need {
		r.start, r.attempt, r.got = time.Time{}, 0, 0
	}
}

// wait decides about err, which failed an attempt: it returns nil after
// sleeping when the attempt should be repeated, or the error to report.
// ctx is the caller's context; an attempt aborted because ctx ended reports
// ctx's error.
func (r *retrier) wait(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !transient(err) || r.p.Deadline < 0 {
		return err
	}
	now := r.clk.Now()
	if r.start.IsZero() {
		r.start = now
	}
	left := r.p.Deadline - now.Sub(r.start)
	if left <= 0 {
		return err
	}
	ceil := r.p.MaxBackoff
	if r.attempt < 30 {
		if c := r.p.InitialBackoff << r.attempt; c < ceil {
			ceil = c
		}
	}
	r.attempt++
	d := time.Duration(0)
	if ceil > 0 {
		d = rand.N(ceil)
	}
	if d > left {
		d = left
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
