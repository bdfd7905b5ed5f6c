package storage

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Defaults of Options; see docs/storage.md.
const (
	DefaultReadAheadBuffers = 4
	DefaultBufferSize       = 1 << 20
	DefaultInitialBackoff   = 50 * time.Millisecond
	DefaultMaxBackoff       = 2 * time.Second
	DefaultRetryDeadline    = 30 * time.Second
	DefaultStallTimeout     = 30 * time.Second
	DefaultMinRate          = 1 << 10
)

// Options configure a Store. The zero value works: every zero field takes its
// default in EnsureDefaults.
type Options struct {
	// ReadAheadBuffers is N, the number of buffers in a sequential Reader's
	// ring: up to N-1 filled buffers wait ahead of the one being read.
	ReadAheadBuffers int
	// BufferSize is S, the size of each ring buffer in bytes.
	BufferSize int
	// Retry is the policy for transient errors.
	Retry RetryPolicy
	// StallTimeout is the window of the stall check: a response body that
	// delivers less than MinRate·StallTimeout bytes in a window (or less
	// than what is left of its range, when that is less; always at least
	// one byte) is aborted and retried. A window does not run while a
	// sequential Reader waits for its caller to take a buffer. Negative
	// disables the check.
	StallTimeout time.Duration
	// MinRate is the slowest a body may deliver, in bytes per second over a
	// window: a server sending a byte every 20 s is stalled, however the
	// bytes keep coming. Negative: only a window without any byte is a
	// stall.
	MinRate int64
	// HTTPClient serves http:// and https:// roots; nil uses a client with
	// the default transport and no overall timeout (stalls are caught by
	// StallTimeout).
	HTTPClient *http.Client
}

// RetryPolicy is exponential backoff with full jitter: the k-th wait is drawn
// uniformly from [0, min(MaxBackoff, InitialBackoff·2^k)). An operation stops
// retrying when Deadline has passed since its first failure (the streak's
// start). A read that makes progress starts a new streak once it has
// delivered a stall window's worth of bytes at Options.MinRate since the
// streak began: a trickle of bytes does not push the deadline back.
type RetryPolicy struct {
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// Deadline bounds one streak of retries; negative disables retries.
	Deadline time.Duration
}

// EnsureDefaults fills every zero field with its default and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.ReadAheadBuffers == 0 {
		o.ReadAheadBuffers = DefaultReadAheadBuffers
	}
	if o.BufferSize == 0 {
		o.BufferSize = DefaultBufferSize
	}
	if o.Retry.InitialBackoff == 0 {
		o.Retry.InitialBackoff = DefaultInitialBackoff
	}
	if o.Retry.MaxBackoff == 0 {
		o.Retry.MaxBackoff = DefaultMaxBackoff
	}
	if o.Retry.Deadline == 0 {
		o.Retry.Deadline = DefaultRetryDeadline
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.MinRate == 0 {
		o.MinRate = DefaultMinRate
	}
	return o
}

// stallFloor is the bytes a stall window must deliver at MinRate (at least
// one). A streak of retries also ends only once this much has come since it
// began (see RetryPolicy).
func (o *Options) stallFloor() int64 {
	w := o.StallTimeout
	if w <= 0 {
		w = DefaultStallTimeout
	}
	return max(1, int64(float64(o.MinRate)*w.Seconds()))
}

// Validate reports every problem at once.
func (o *Options) Validate() error {
	var errs []error
	if o.ReadAheadBuffers < 2 {
		errs = append(errs, fmt.Errorf("storage: ReadAheadBuffers %d: need at least 2", o.ReadAheadBuffers))
	}
	if o.BufferSize < 512 {
		errs = append(errs, fmt.Errorf("storage: BufferSize %d: need at least 512 bytes", o.BufferSize))
	}
	if o.Retry.InitialBackoff < 0 || o.Retry.MaxBackoff < 0 {
		errs = append(errs, errors.New("storage: negative backoff"))
	}
	if o.Retry.InitialBackoff > o.Retry.MaxBackoff {
		errs = append(errs, fmt.Errorf("storage: InitialBackoff %v exceeds MaxBackoff %v", o.Retry.InitialBackoff, o.Retry.MaxBackoff))
	}
	return errors.Join(errs...)
}
