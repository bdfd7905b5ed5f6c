package collective

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

// sendWait sends a wait for keys on c and then a number-of-keys query,
// whose answer says the wait was taken in (queries of a connection are
// handled in order).
func sendWait(t *testing.T, c net.Conn, keys []string) error {
	t.Helper()
	q, err := appendQuery(nil, &query{typ: qWait, keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	q = append(q, qNumKeys)
	if _, err := c.Write(q); err != nil {
		return err
	}
	_, err = io.ReadFull(c, make([]byte, 8))
	return err
}

func waitKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("/%s/%d", prefix, i)
	}
	return keys
}

// Pending waits are indexed by key: a change touches only the waits that
// name the key (before: every change rescanned every wait's keys under the
// server's one lock — 400 waits of 65,536 keys stalled every query for
// 5 s). The count of waits touched is the verdict, not a time.
func TestStoreWaitsIndexed(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	conns := make([]net.Conn, 4)
	for i := range conns {
		conns[i] = dialStore(t, srv)
		if err := sendWait(t, conns[i], append(waitKeys(fmt.Sprint("w", i), 4096), "/common", "/common")); err != nil {
			t.Fatal(err)
		}
	}
	st := dial(t, srv, 0)
	for i := range 1000 {
		if err := st.Set(fmt.Sprint("other/", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	touched := func() int {
		st.Check([]string{"other/0"}) // the sets before it are applied
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.touched
	}
	if n := touched(); n != 0 {
		t.Errorf("1000 sets of keys no wait names touched %d waits", n)
	}
	st.Set("common", nil)
	if n := touched(); n != 4 {
		t.Errorf("a key all 4 waits name touched %d", n)
	}
	for _, k := range waitKeys("w0", 4096) {
		st.Set(strings.TrimPrefix(k, "/"), nil)
	}
	got := make([]byte, 1)
	if _, err := io.ReadFull(conns[0], got); err != nil || got[0] != waitStop {
		t.Fatalf("the wait whose keys all appeared: %x, %v", got, err)
	}
	if n := touched(); n != 4+4096 {
		t.Errorf("touched %d waits, want %d", n, 4+4096)
	}
	// A deleted key is missing again: the wait answers when it is back.
	st.Set("w1/0", nil)
	raw := dialStore(t, srv)
	raw.Write(appendString([]byte{qDeleteKey}, "/w1/0"))
	if _, err := io.ReadFull(raw, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	for _, k := range waitKeys("w1", 4096)[1:] {
		st.Set(strings.TrimPrefix(k, "/"), nil)
	}
	pending := func() (keys, indexed int) {
		st.Check([]string{"other/0"})
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.pending.keys, len(srv.waiters)
	}
	if keys, indexed := pending(); keys != 3*4097 || indexed != 3*4096+1 {
		t.Errorf("%d keys pending over %d indexed, want 3 waits of 4097 keys: conn 1's misses the deleted key", keys, indexed)
	}
	st.Set("w1/0", nil)
	if _, err := io.ReadFull(conns[1], got); err != nil || got[0] != waitStop {
		t.Fatalf("conn 1's wait: %x, %v", got, err)
	}
	if keys, indexed := pending(); keys != 2*4097 || indexed != 2*4096+1 {
		t.Errorf("%d keys pending over %d indexed, want 2 waits of 4097 keys", keys, indexed)
	}
}

// The keys pending waits hold are bounded, on a connection and on the
// server: a wait beyond is refused by hanging up on its connection (before:
// 400 waits of 65,536 keys took 1.5 GB); so is one wait whose keys pass
// 16 MiB together.
func TestStoreWaitsBounded(t *testing.T) {
	checkGoroutines(t)
	srv := startStore(t)
	srv.mu.Lock()
	srv.limits.conn, srv.limits.keys, srv.limits.bytes = 100, 150, 1<<20
	srv.mu.Unlock()
	hungUp := func(c net.Conn) bool {
		var buf bytes.Buffer
		_, err := buf.ReadFrom(c) // EOF, or a reset when the server left bytes unread
		return (err == nil || isReset(err)) && buf.Len() == 0
	}
	a := dialStore(t, srv)
	if err := sendWait(t, a, waitKeys("a", 60)); err != nil {
		t.Fatal(err)
	}
	if err := sendWait(t, a, waitKeys("a2", 60)); err == nil || !hungUp(a) {
		t.Errorf("120 keys pending on a connection of at most 100: %v", err)
	}
	b := dialStore(t, srv)
	if err := sendWait(t, b, waitKeys("b", 100)); err != nil {
		t.Fatal(err)
	}
	c := dialStore(t, srv)
	if err := sendWait(t, c, waitKeys("c", 60)); err == nil || !hungUp(c) {
		t.Errorf("160 keys pending on a server of at most 150: %v", err)
	}
	// a's waits went with its connection: 100 keys pending, b's.
	srv.mu.Lock()
	if srv.pending.keys != 100 {
		t.Errorf("%d keys pending, want b's 100", srv.pending.keys)
	}
	srv.mu.Unlock()

	// One wait of 4100 keys of 4 KiB: above 16 MiB of keys, refused as it is read.
	d := dialStore(t, srv)
	var q []byte
	q = binary.LittleEndian.AppendUint64(append(q, qWait), 4100)
	long := strings.Repeat("k", maxStoreKey)
	for range 4100 {
		q = appendString(q, long)
	}
	go d.Write(q)
	if !hungUp(d) {
		t.Error("a wait of 16.8 MB of keys was not refused")
	}
	if _, err := appendQuery(nil, &query{typ: qWait, keys: slicesRepeat(long, 4100)}); err == nil {
		t.Error("the client sent a wait of 16.8 MB of keys")
	}
}

func slicesRepeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
