package collective

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
	if ok, err := b.Check([]string{"addr/1", "empty"}); !ok || err != nil {
		t.Fatalf("Check of set keys = %v, %v", ok, err)
	}
	if ok, err := b.Check([]string{"addr/1", "unset"}); ok || err != nil {
		t.Fatalf("Check with an unset key = %v, %v", ok, err)
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
	if err := a.Set("huge", make([]byte, maxStoreValue+1)); err == nil {
		t.Fatal("Set of a value over the limit succeeded")
	}
	// Refused calls sent nothing: the store is still usable.
	if v, err := a.Get("addr/1"); err != nil || string(v) != "hello" {
		t.Fatalf("Get after refused calls = %q, %v", v, err)
	}
	// torch's server fails a connection that adds to a value that is not
	// a number; so does ours, and the client's error says the server hung
	// up.
	if _, err := b.Add("addr/1", 1); !errors.Is(err, ErrPeer) {
		t.Fatalf("Add on a value: %v", err)
	}
	if err := a.Set("after", []byte("ok")); err != nil {
		t.Fatalf("Set after a refused one: %v", err)
	}
}

func TestStoreTimeout(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	// The store's own timeout is long (dialing and reconnecting must not
	// depend on the machine's speed); the waits have short ones. Load can
	// only lengthen a wait, so the lower bound holds anywhere.
	s := dial(t, srv, 30*time.Second)
	start := time.Now()
	err := s.WaitTimeout([]string{"never"}, 100*time.Millisecond)
	if !errors.Is(err, ErrPeer) || !strings.Contains(err.Error(), `key "never" not set within 100ms`) {
		t.Fatalf("Wait = %v", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("Wait returned after %v", d)
	}
	if err := s.WaitTimeout([]string{"never", "nor"}, time.Millisecond); !errors.Is(err, ErrPeer) || !strings.Contains(err.Error(), `keys ["never" "nor"] not all set within 1ms`) {
		t.Fatalf("Wait = %v", err)
	}
	// A timeout leaves the store usable (on a new connection).
	if err := s.Set("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("k"); err != nil || string(v) != "v" {
		t.Fatalf("Get after a timeout = %q, %v", v, err)
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
		// Then a server that hangs up at once, as torch 2.x's does on a
		// query that did not validate first.
		if c, err = ln.Accept(); err != nil {
			return
		}
		c.Close()
	}()
	_, err = DialStore(ln.Addr().String(), 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "not a TCPStore server") || !strings.Contains(err.Error(), "HTTP/1.1") {
		t.Fatalf("DialStore (HTTP) = %v", err)
	}
	_, err = DialStore(ln.Addr().String(), 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "torch 2.x") {
		t.Fatalf("DialStore (hang-up) = %v", err)
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

// TestStoreServerRejects sends queries by hand and checks that the server
// hangs up on absurd lengths without allocating them, on unknown query
// types, and on torch 2.x's validation query.
func TestStoreServerRejects(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	le := binary.LittleEndian
	for _, q := range [][]byte{
		le.AppendUint64([]byte{qSet}, 1<<62),                    // huge key
		le.AppendUint64(appendString([]byte{qSet}, "k"), 1<<40), // huge value
		le.AppendUint64([]byte{qWait}, 1<<40),                   // key count
		{99},                                                    // unknown type
		{qWatchKey, 1, 0, 0, 0, 0, 0, 0, 0, 'k'},                // torch's callback socket
		le.AppendUint32([]byte{0}, qValidateMagic),              // torch 2.x
		appendString([]byte{qGet}, "/missing"),                  // get before wait
		append(appendBytes(appendString([]byte{qSet}, "/s"), []byte("x")), // a value
			le.AppendUint64(appendString([]byte{qAdd}, "/s"), 1)...), // that is not a counter
	} {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write(q)
		var buf bytes.Buffer
		_, err = buf.ReadFrom(c) // until the server hangs up
		c.Close()
		if err != nil || buf.Len() != 0 {
			t.Errorf("query %x: answer %x, %v; want a hang-up", q, buf.Bytes(), err)
		}
	}
}

// torchSession is a conversation between torch 1.13's Python TCPStore
// client and server, captured on the wire: per connection, what the client
// sent and what the server answered, in order. Client calls: TCPStore(…,
// world_size=2, is_master=False) (which adds to "init/"), set("k1", "v1"),
// get("k1"), add("cnt", 5), wait(["k1"]), num_keys(), compare_set("k1",
// "v1", "v2"), delete_key("k1"), PrefixStore("/worker/attempt_0",
// client).set("x", "1"), get("cnt").
var torchSession = []struct{ query, answer string }{
	{"030500000000000000696e69742f0100000000000000", "0100000000000000"},
	{"0003000000000000002f6b3102000000000000007631", ""},
	{"05010000000000000003000000000000002f6b31", "00"},
	{"0203000000000000002f6b31", "02000000000000007631"},
	{"0304000000000000002f636e740500000000000000", "0500000000000000"},
	{"05010000000000000003000000000000002f6b31", "00"},
	{"06", "0300000000000000"},
	{"0103000000000000002f6b310200000000000000763102000000000000007632", "02000000000000007632"},
	{"0803000000000000002f6b31", "0100000000000000"},
	{"0014000000000000002f2f776f726b65722f617474656d70745f302f78010000000000000031", ""},
	{"05010000000000000004000000000000002f636e74", "00"},
	{"0204000000000000002f636e74", "010000000000000035"},
}

// dialStore connects to srv with a hang guard of 10 s on the connection;
// the test closes it.
func dialStore(t *testing.T, srv *StoreServer) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// Our server answers torch's client byte for byte as torch's server did.
func TestStoreServerSpeaksTorch(t *testing.T) {
	checkGoroutines(t)
	c := dialStore(t, startStore(t))
	for _, x := range torchSession {
		q, _ := hex.DecodeString(x.query)
		want, _ := hex.DecodeString(x.answer)
		if _, err := c.Write(q); err != nil {
			t.Fatal(err)
		}
		// A set has no answer: ask for the number of keys to know it was
		// applied, and drop that answer.
		if len(want) == 0 {
			c.Write([]byte{qNumKeys})
			want = make([]byte, 8)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("query %s: %v", x.query, err)
		}
		if x.answer != "" && !bytes.Equal(got, want) {
			t.Fatalf("query %s: answer %x, torch's server answered %s", x.query, got, x.answer)
		}
	}
}

// Our client sends what torch's client sends for the same calls.
func TestStoreClientSpeaksTorch(t *testing.T) {
	want := func(i int) []byte { b, _ := hex.DecodeString(torchSession[i].query); return b }
	for _, c := range []struct {
		q   query
		idx int
	}{
		{query{typ: qSet, key: wireKey("k1"), value: []byte("v1")}, 1},
		{query{typ: qWait, keys: []string{wireKey("k1")}}, 2},
		{query{typ: qGet, key: wireKey("k1")}, 3},
		{query{typ: qAdd, key: wireKey("cnt"), delta: 5}, 4},
		{query{typ: qNumKeys}, 6},
		{query{typ: qSet, key: wireKey("/worker/attempt_0/x"), value: []byte("1")}, 9},
	} {
		got, err := appendQuery(nil, &c.q)
		if err != nil || !bytes.Equal(got, want(c.idx)) {
			t.Errorf("%+v: %x, %v; torch sends %x", c.q, got, err, want(c.idx))
		}
	}
}

// A wait pending on a connection does not hold the connection's later
// queries, and is answered when its key appears (torch's server does the
// same; its client never relies on it, but a client may).
func TestStoreServerWaitsAside(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	c := dialStore(t, srv)
	var q []byte
	q, _ = appendQuery(q, &query{typ: qWait, keys: []string{"/late"}})
	q, _ = appendQuery(q, &query{typ: qAdd, key: "/n", delta: 7})
	c.Write(q)
	got := make([]byte, 8)
	if _, err := io.ReadFull(c, got); err != nil || binary.LittleEndian.Uint64(got) != 7 {
		t.Fatalf("add behind a pending wait: %x, %v", got, err)
	}
	other := dial(t, srv, 5*time.Second)
	if err := other.Set("late", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, got[:1]); err != nil || got[0] != waitStop {
		t.Fatalf("the pending wait: %x, %v", got[:1], err)
	}
}

func seedQueries() []query {
	return []query{
		{typ: qSet, key: "k", value: []byte("v")},
		{typ: qSet, key: "", value: []byte{}},
		{typ: qCompareSet, key: "k", value: []byte{}, desired: []byte("d")},
		{typ: qGet, key: "rank/1"},
		{typ: qAdd, key: "n", delta: -3},
		{typ: qCheck, keys: []string{"a"}},
		{typ: qWait, keys: []string{"a", "bb"}},
		{typ: qWait, keys: []string{}},
		{typ: qNumKeys},
		{typ: qDeleteKey, key: "k"},
	}
}

func TestQueryRoundTrip(t *testing.T) {
	for _, q := range seedQueries() {
		b, err := appendQuery(nil, &q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readQuery(bufio.NewReader(bytes.NewReader(b)), false)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(q) {
			t.Fatalf("got %+v, want %+v", got, q)
		}
	}
}

// FuzzStoreFrame feeds arbitrary bytes to the query reader: it must not
// panic or allocate absurd amounts, and every query it accepts must encode
// back to the bytes it read.
func FuzzStoreFrame(f *testing.F) {
	for _, q := range seedQueries() {
		b, _ := appendQuery(nil, &q)
		f.Add(b)
	}
	for _, x := range torchSession {
		b, _ := hex.DecodeString(x.query)
		f.Add(b)
	}
	f.Add(binary.LittleEndian.AppendUint64([]byte{qWait}, 1<<40))
	f.Fuzz(func(t *testing.T, data []byte) {
		cr := &countingReader{r: bytes.NewReader(data)}
		br := bufio.NewReaderSize(cr, 16)
		for first := true; ; first = false {
			start := cr.n - br.Buffered()
			q, err := readQuery(br, first)
			if err != nil {
				if err != io.EOF && !errors.Is(err, errFrame) && err != io.ErrUnexpectedEOF && err != errTorch2 {
					t.Fatalf("error %v is not io.EOF, io.ErrUnexpectedEOF, errTorch2 or errFrame", err)
				}
				return
			}
			end := cr.n - br.Buffered()
			again, err := appendQuery(nil, &q)
			if err != nil {
				t.Fatalf("re-encode %+v: %v", q, err)
			}
			if !bytes.Equal(again, data[start:end]) {
				t.Fatalf("round trip:\n in %x\nout %x", data[start:end], again)
			}
		}
	})
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestClaimRank: the first claim of a rank in a group's store succeeds, a
// second one is ErrDuplicateRank naming the rank; another rank, or the
// same rank under another prefix (another attempt of the group), is free.
func TestClaimRank(t *testing.T) {
	srv, err := ListenStore("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dial := func() *Store {
		s, err := DialStore(srv.Addr().String(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	first, second := dial(), dial()
	if err := ClaimRank(first, "g/", 1); err != nil {
		t.Fatal(err)
	}
	err = ClaimRank(second, "g/", 1)
	if !errors.Is(err, ErrDuplicateRank) || !strings.Contains(err.Error(), "rank 1 joined this rendezvous twice") {
		t.Fatalf("second claim of rank 1: %v", err)
	}
	for _, c := range []struct {
		prefix string
		rank   int
	}{{"g/", 0}, {"attempt_1/g/", 1}} {
		if err := ClaimRank(second, c.prefix, c.rank); err != nil {
			t.Errorf("claim of rank %d under %q: %v", c.rank, c.prefix, err)
		}
	}
}
