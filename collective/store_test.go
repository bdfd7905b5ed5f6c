package collective

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// checkGoroutines fails t if, after the test, more goroutines run than
// before it.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		t.Helper()
		var now int
		for range 100 {
			if now = runtime.NumGoroutine(); now <= before {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after:\n%s", before, now, buf[:runtime.Stack(buf, true)])
	})
}

func startStore(t *testing.T) *StoreServer {
	t.Helper()
	srv, err := ListenStore("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func dial(t *testing.T, srv *StoreServer, timeout time.Duration) *Store {
	t.Helper()
	s, err := DialStore(srv.Addr().String(), timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	a, b := dial(t, srv, 5*time.Second), dial(t, srv, 5*time.Second)

	got := make(chan []byte, 1)
	go func() {
		v, err := b.Get("addr/1")
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	time.Sleep(20 * time.Millisecond) // let the Get block first (not required)
	if err := a.Set("addr/1", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if v := <-got; string(v) != "hello" {
		t.Fatalf("Get = %q", v)
	}
	if err := a.Set("empty", nil); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get("empty"); err != nil || len(v) != 0 {
		t.Fatalf("Get(empty) = %q, %v", v, err)
	}
	if err := b.Wait([]string{"addr/1", "empty"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(nil); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if _, err := a.Add("n", 1); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n, err := b.Add("n", 0); err != nil || n != 80 {
		t.Fatalf("Add = %d, %v; want 80", n, err)
	}
	if n, err := b.Add("n", -100); err != nil || n != -20 {
		t.Fatalf("Add = %d, %v; want -20", n, err)
	}
	if _, err := b.Add("addr/1", 1); err == nil || !strings.Contains(err.Error(), "not a counter") {
		t.Fatalf("Add on a value: %v", err)
	}
	big := bytes.Repeat([]byte{7}, 1<<20)
	if err := a.Set("big", big); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get("big"); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("Get(big): %d bytes, %v", len(v), err)
	}
	if err := a.Set(strings.Repeat("k", maxStoreKey+1), nil); err == nil {
		t.Fatal("Set with a huge key succeeded")
	}
	if err := a.Set("huge", make([]byte, maxStoreFrame)); err == nil {
		t.Fatal("Set of a value over the frame limit succeeded")
	}
	if err := a.Set("after", []byte("ok")); err != nil {
		t.Fatalf("Set after a refused one: %v", err)
	}
}

func TestStoreTimeout(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	s := dial(t, srv, 100*time.Millisecond)
	start := time.Now()
	_, err := s.Get("never")
	if !errors.Is(err, ErrPeer) || !strings.Contains(err.Error(), `"never" not set within 100ms`) {
		t.Fatalf("Get = %v", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("Get returned after %v", d)
	}
	if err := s.Wait([]string{"never"}); !errors.Is(err, ErrPeer) {
		t.Fatalf("Wait = %v", err)
	}
	// A timeout leaves the connection usable.
	if err := s.Set("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
}

func TestStoreDialRetries(t *testing.T) {
	checkGoroutines(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	type result struct {
		s   *Store
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := DialStore(addr, 10*time.Second)
		done <- result{s, err}
	}()
	time.Sleep(200 * time.Millisecond)
	srv, err := ListenStore(addr)
	if err != nil {
		t.Skipf("port reused meanwhile: %v", err)
	}
	defer srv.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.s.Close()
	if err := r.s.Set("a", nil); err != nil {
		t.Fatal(err)
	}
}

func TestStoreDialTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = DialStore(addr, 200*time.Millisecond)
	if !errors.Is(err, ErrPeer) || !strings.Contains(err.Error(), "did not answer within 200ms") {
		t.Fatalf("DialStore = %v", err)
	}
}

func TestStoreNotAStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Write([]byte("HTTP/1.1 400\r\n"))
		c.Close()
	}()
	_, err = DialStore(ln.Addr().String(), 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "not a faster store server") {
		t.Fatalf("DialStore = %v", err)
	}
}

func TestStorePortInUse(t *testing.T) {
	srv := startStore(t)
	_, err := ListenStore(srv.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("second ListenStore = %v", err)
	}
}

func TestStoreServerDies(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	s := dial(t, srv, 10*time.Second)
	if err := s.Set("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.Get("never") // pending when the server dies
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	srv.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrPeer) {
			t.Fatalf("pending Get = %v, want ErrPeer", err)
		}
		t.Logf("pending Get failed %v after the server closed: %v", time.Since(start), err)
	case <-time.After(5 * time.Second):
		t.Fatal("pending Get still blocked 5s after the server closed")
	}
	if err := s.Set("b", nil); !errors.Is(err, ErrPeer) {
		t.Fatalf("Set after the server died = %v", err)
	}
}

func TestStoreClientClose(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	s, err := DialStore(srv.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.Get("never")
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	s.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Get during Close = %v", err)
	}
	if err := s.Set("x", nil); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Set after Close = %v", err)
	}
	// The server's goroutine for the connection exits on Close, even while
	// its Get still waits.
	srv.Close()
}

// TestStoreServerRejects sends frames by hand and checks that the server
// refuses absurd lengths without allocating them.
func TestStoreServerRejects(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	for _, frame := range [][]byte{
		binary.BigEndian.AppendUint32(nil, 1<<31),                                             // huge length
		binary.BigEndian.AppendUint32(nil, 0),                                                 // empty body
		append(binary.BigEndian.AppendUint32(nil, 1), 99),                                     // unknown op
		append(binary.BigEndian.AppendUint32(nil, 9), opWait, 0, 0, 0, 1, 255, 255, 255, 255), // key count overruns
	} {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write(storeMagic[:])
		c.Write(frame)
		var buf bytes.Buffer
		buf.ReadFrom(c) // until the server hangs up
		c.Close()
		if b := buf.Bytes(); len(b) < len(storeMagic) || !bytes.Equal(b[:len(storeMagic)], storeMagic[:]) {
			t.Fatalf("frame %x: answer %q", frame, b)
		}
	}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, req := range seedRequests() {
		frame, err := appendRequest(nil, &req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := readFrame(bytes.NewReader(frame), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRequest(body)
		if err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(req) {
			t.Fatalf("got %+v, want %+v", got, req)
		}
	}
}

func seedRequests() []storeRequest {
	return []storeRequest{
		{op: opSet, key: "k", value: []byte("v")},
		{op: opSet, key: "", value: []byte{}},
		{op: opGet, key: "rank/1", timeout: 1000},
		{op: opWait, keys: []string{"a", "bb"}, timeout: 5},
		{op: opWait, keys: []string{}, timeout: 0},
		{op: opAdd, key: "n", delta: -3},
	}
}

// FuzzStoreFrame feeds arbitrary bytes to the frame reader and request
// decoder: they must not panic or allocate absurd amounts, and every
// request they accept must encode back to the same bytes.
func FuzzStoreFrame(f *testing.F) {
	for _, req := range seedRequests() {
		frame, _ := appendRequest(nil, &req)
		f.Add(frame)
	}
	f.Add(binary.BigEndian.AppendUint32(nil, 1<<31))
	f.Add(append(binary.BigEndian.AppendUint32(nil, 9), opWait, 0, 0, 0, 1, 255, 255, 255, 255))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			start := len(data) - r.Len()
			body, err := readFrame(r, nil)
			if err != nil {
				return
			}
			frame := data[start : len(data)-r.Len()]
			req, err := decodeRequest(body)
			if err != nil {
				if !errors.Is(err, errFrame) {
					t.Fatalf("decode error %v does not wrap errFrame", err)
				}
				continue
			}
			again, err := appendRequest(nil, &req)
			if err != nil {
				t.Fatalf("re-encode %+v: %v", req, err)
			}
			if !bytes.Equal(again, frame) {
				t.Fatalf("round trip:\n in %x\nout %x", frame, again)
			}
		}
	})
}
