package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"github.com/faster-training/faster/storage/s3test"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestS3ServerRestart kills the S3 server in the middle of a sequential read
// and starts it again on the same port and data a moment later: the read
// completes with every byte exactly once.
func TestS3ServerRestart(t *testing.T) {
	sharedS3(t) // skips or fails as the shared server would
	srv, err := s3test.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := testCtx(t)
	if err := srv.CreateBucket(ctx, vgwBucket); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(9, 48<<20)
	if err := uploadFixtures(ctx, srv.RootURL("r"), []fixture{{"big.bin", data}}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, srv.RootURL("r"), &Options{
		ReadAheadBuffers: 4, BufferSize: 256 << 10,
		Retry: RetryPolicy{InitialBackoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, Deadline: 50 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.NewReader(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	h := sha256.New()
	const k = 8 << 20
	if _, err := io.CopyN(h, r, k); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	var rest int64
	done := make(chan error, 1)
	go func() {
		n, err := io.Copy(h, r)
		rest = n
		done <- err
	}()
	// Restart once the reader has met the outage (a failed attempt, so a
	// retry pending), not after a fixed pause: how long the reader takes to
	// get there depends on the machine's load, and the test must not.
	for r.Retries() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the read ended (%v) without retrying while the server was down", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("read after the restart: %v", err)
	}
	if k+rest != int64(len(data)) {
		t.Errorf("read %d bytes, want %d", k+rest, len(data))
	}
	if got, want := h.Sum(nil), sha256.Sum256(data); !bytes.Equal(got, want[:]) {
		t.Errorf("sha256 differs: bytes lost or duplicated")
	}
	t.Logf("%d retries across the outage", r.Retries())
	r.Close()
	checkNoFillers(t)
}

// flakyServer serves one object with HTTP Range support and fails on
// purpose: some responses are 503, some bodies are cut after a random
// number of bytes, some stall.
type flakyServer struct {
	data     []byte
	requests atomic.Int64
	stall    bool // stall instead of cutting
	mu       sync.Mutex
	rng      *rand.Rand
}

type cutWriter struct {
	http.ResponseWriter
	left int
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		p = p[:w.left]
	}
	n, err := w.ResponseWriter.Write(p)
	w.left -= n
	if w.left == 0 {
		w.ResponseWriter.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drop the connection mid-body
	}
	return n, err
}

type stallWriter struct {
	http.ResponseWriter
	left int
	ctx  context.Context
}

func (w *stallWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		p = p[:w.left]
	}
	n, err := w.ResponseWriter.Write(p)
	w.left -= n
	if w.left == 0 {
		w.ResponseWriter.(http.Flusher).Flush()
		<-w.ctx.Done() // hang until the client gives up
		return n, w.ctx.Err()
	}
	return n, err
}

func (f *flakyServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	f.requests.Add(1)
	f.mu.Lock()
	roll := f.rng.IntN(4)
	cut := 1 + f.rng.IntN(300<<10)
	f.mu.Unlock()
	switch roll {
	case 0:
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	case 1, 2:
		if f.stall {
			w = &stallWriter{w, cut, req.Context()}
		} else {
			w = &cutWriter{w, cut}
		}
	}
	http.ServeContent(w, req, "obj", time.Unix(1700000000, 0), bytes.NewReader(f.data))
}

// TestRetryResumesExactly reads through a server that fails most requests:
// sequential reads and ReadAt still return exactly the object's bytes.
func TestRetryResumesExactly(t *testing.T) {
	for _, stall := range []bool{false, true} {
		name := map[bool]string{false: "cut", true: "stall"}[stall]
		t.Run(name, func(t *testing.T) {
			f := &flakyServer{data: randomBytes(5, 2<<20+3), stall: stall, rng: rand.New(rand.NewPCG(3, 4))}
			hs := httptest.NewServer(f)
			defer hs.Close()
			ctx := testCtx(t)
			s, err := Open(ctx, hs.URL, &Options{
				ReadAheadBuffers: 3, BufferSize: 32 << 10, StallTimeout: 100 * time.Millisecond,
				Retry: RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, Deadline: 10 * time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r, err := s.NewReader(ctx, "obj")
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, f.data) {
				t.Fatalf("sequential read: %d bytes, differing from the %d served", len(got), len(f.data))
			}
			if r.Retries() == 0 {
				t.Error("sequential read: no retries")
			}
			ra, err := s.OpenReaderAt(ctx, "obj")
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 500<<10)
			for _, off := range []int64{0, 12345, int64(len(f.data)) - 1000} {
				n, err := ra.ReadAt(buf, off)
				if err != nil && err != io.EOF {
					t.Fatalf("ReadAt %d: %v", off, err)
				}
				if !bytes.Equal(buf[:n], f.data[off:off+int64(n)]) {
					t.Fatalf("ReadAt %d: wrong bytes", off)
				}
			}
			t.Logf("%d requests, %d sequential retries, %d ReadAt retries", f.requests.Load(), r.Retries(), ra.Retries())
			checkNoFillers(t)
		})
	}
}

// TestRetryDeadline gives up after the deadline and names URL and offset.
func TestRetryDeadline(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer hs.Close()
	s, err := Open(testCtx(t), hs.URL+"/d", &Options{Retry: RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Deadline: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	_, err = s.NewRangeReader(testCtx(t), "x.bin", 0, 10)
	var se *Error
	if !errors.As(err, &se) || se.URL != hs.URL+"/d/x.bin" || se.Offset != 0 {
		t.Fatalf("error %v does not name the URL and offset", err)
	}
	// Load can only lengthen the wait, never shorten it: the lower bound
	// holds on any machine (testCtx's minute bounds a hang).
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("gave up after %v, before the 200ms deadline", el)
	}
	// Permanent errors are not retried: one request, however long it took.
	var requests atomic.Int64
	hs2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer hs2.Close()
	s2, _ := Open(testCtx(t), hs2.URL, nil)
	defer s2.Close()
	if _, err := s2.Stat(testCtx(t), "x"); err == nil || requests.Load() != 1 {
		t.Errorf("403: err %v after %d requests; want an error after one", err, requests.Load())
	}
}
