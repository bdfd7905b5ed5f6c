package storage

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is time moved by the test: its timers fire only in Advance.
// Each timer started is announced on armed, so a test advances exactly
// when the code under test waits on the clock.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	armed  chan struct{}
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1700000000, 0), armed: make(chan struct{}, 1024)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	c.armed <- struct{}{}
	return t
}

func (t *fakeTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

// Advance moves the clock by d and runs the timers then due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// trickleServer answers every GET of its object with the range's headers
// and then one byte, and holds the connection: a byte a window at most,
// far below any rate floor (the server sent a byte every 20 s).
type trickleServer struct {
	size     int64
	requests atomic.Int64
}

func (s *trickleServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Last-Modified", time.Unix(1700000000, 0).UTC().Format(http.TimeFormat))
	if req.Method == http.MethodHead {
		w.Header().Set("Content-Length", strconv.FormatInt(s.size, 10))
		return
	}
	s.requests.Add(1)
	a, b, _ := strings.Cut(strings.TrimPrefix(req.Header.Get("Range"), "bytes="), "-")
	off, _ := strconv.ParseInt(a, 10, 64)
	end, err := strconv.ParseInt(b, 10, 64)
	if err != nil {
		end = s.size - 1
	}
	w.Header().Set("Content-Range", "bytes "+a+"-"+strconv.FormatInt(end, 10)+"/"+strconv.FormatInt(s.size, 10))
	w.Header().Set("Content-Length", strconv.FormatInt(end+1-off, 10))
	w.WriteHeader(http.StatusPartialContent)
	w.Write([]byte{'x'})
	w.(http.Flusher).Flush()
	<-req.Context().Done()
}

// TestTrickleIsAStall: a server that keeps sending a byte now and then is
// stalled (a rate below Options.MinRate over a window), and its trickle
// does not push the retry deadline back: the read fails naming the URL,
// after the windows the deadline allows (before: each byte restarted the
// stall timer and the deadline, and the read never ended). Time is the
// test's clock: the verdict counts windows, not seconds.
func TestTrickleIsAStall(t *testing.T) {
	for _, how := range []string{"Reader", "ReaderAt"} {
		t.Run(how, func(t *testing.T) {
			srv := &trickleServer{size: 1 << 20}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			const window = 10 * time.Second
			s, err := Open(testCtx(t), hs.URL, &Options{StallTimeout: window, MinRate: 1024,
				Retry: RetryPolicy{InitialBackoff: time.Microsecond, MaxBackoff: time.Microsecond, Deadline: 3 * window}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			clk := newFakeClock()
			s.clock = clk
			done := make(chan error, 1)
			go func() {
				if how == "ReaderAt" {
					ra, err := s.OpenReaderAt(testCtx(t), "obj")
					if err == nil {
						_, err = ra.ReadAt(make([]byte, 4096), 0)
					}
					done <- err
					return
				}
				r, err := s.NewReader(testCtx(t), "obj")
				if err == nil {
					_, err = io.Copy(io.Discard, r)
					r.Close()
				}
				done <- err
			}()
			windows := 0
			for {
				select {
				case <-clk.armed: // an attempt's window began: end it
					windows++
					if windows > 10 {
						t.Fatalf("still reading after %d windows of a trickle (%d requests)", windows, srv.requests.Load())
					}
					clk.Advance(window)
					continue
				case err = <-done:
				}
				break
			}
			// Stalls at windows 1..4; the fourth comes 3 windows (the
			// deadline) after the first failure.
			if !errors.Is(err, errStalled) || !strings.Contains(err.Error(), hs.URL+"/obj") {
				t.Errorf("after %d windows: %v, want a stall naming the URL", windows, err)
			}
			if n := srv.requests.Load(); windows != 4 || n != 4 {
				t.Errorf("gave up after %d windows and %d requests, want 4 of each", windows, n)
			}
			checkNoFillers(t)
		})
	}
}
