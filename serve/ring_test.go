package serve

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
)

// testRing is a ring of n slots of 3 pages over plain memory, whose
// reserve records what it was asked for and fails while fail is set.
type testRing struct {
	*ring
	asked []int64 // offsets reserved, in order
	fail  error
}

func newTestRing(n int) *testRing {
	h := &Hello{Slots: n, SlotBytes: 3 * pageBytes, HeaderBytes: HeaderBytes, ImagesOffset: SlotHeader, Batch: 1, RowBytes: pageBytes}
	tr := &testRing{ring: newRing(make([]byte, HeaderBytes+int64(n)*h.SlotBytes), h)}
	tr.reserve = func(off, n int64) error {
		if n != h.SlotBytes {
			return errors.New("reserve of a partial slot")
		}
		if tr.fail != nil {
			return tr.fail
		}
		tr.asked = append(tr.asked, off)
		return nil
	}
	return tr
}

// A slot's space is reserved once, before its first use, and a consumer
// that keeps up reuses the slot it freed last: the other slots' pages are
// never asked for.
func TestRingReservesSlotsOnFirstUse(t *testing.T) {
	r := newTestRing(7)
	ctx := context.Background()
	for range 20 {
		_, id, err := r.Alloc(ctx, pageBytes)
		if err != nil {
			t.Fatal(err)
		}
		i, err := r.announce(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.consumerFree(i); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.asked) != 1 || r.asked[0] != HeaderBytes {
		t.Fatalf("20 batches through one slot at a time reserved %v, want [%d] (slot 0 once)", r.asked, HeaderBytes)
	}
	// Two in flight: the second slot is reserved once too.
	_, a, _ := r.Alloc(ctx, pageBytes)
	_, b, _ := r.Alloc(ctx, pageBytes)
	r.Free(a)
	r.Free(b)
	_, a, _ = r.Alloc(ctx, pageBytes)
	_, b, _ = r.Alloc(ctx, pageBytes)
	r.Free(a)
	r.Free(b)
	if want := []int64{HeaderBytes, HeaderBytes + 3*pageBytes}; len(r.asked) != 2 || r.asked[1] != want[1] {
		t.Fatalf("reserved %v, want %v", r.asked, want)
	}
}

// A reservation that fails (a full tmpfs) is Alloc's error, the slot goes
// back to the free list unreserved, and the next Alloc asks again.
func TestRingReserveFailure(t *testing.T) {
	r := newTestRing(2)
	r.fail = syscall.ENOSPC
	if _, _, err := r.Alloc(context.Background(), pageBytes); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Alloc with a full file system: %v, want ENOSPC", err)
	}
	if len(r.free) != 2 {
		t.Fatalf("%d free slots after a failed reservation, want 2", len(r.free))
	}
	r.fail = nil
	if _, _, err := r.Alloc(context.Background(), pageBytes); err != nil {
		t.Fatal(err)
	}
	if len(r.asked) != 1 {
		t.Fatalf("reserved %v after the retry, want one slot", r.asked)
	}
}

// The file holds only the header's space until a slot is reserved, then
// that slot's too (st_blocks counts what the file system allocated).
func TestShmReservesLazily(t *testing.T) {
	const slot = 64 * pageBytes
	size := int64(HeaderBytes + 4*slot)
	dir := "/dev/shm"
	if _, err := os.Stat(dir); err != nil {
		dir = t.TempDir()
	}
	m, err := createShm(dir, size, HeaderBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if !m.lazy {
		t.Skipf("%s does not reserve space (fallocate not supported): nothing is reserved up front there", dir)
	}
	used := func() int64 {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(m.f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	if u := used(); u >= slot {
		t.Fatalf("a fresh ring of %d bytes holds %d bytes, want the header's only", size, u)
	}
	if err := m.reserve(HeaderBytes+slot, slot); err != nil {
		t.Fatal(err)
	}
	if u := used(); u < slot || u >= 2*slot {
		t.Fatalf("one reserved slot of %d bytes: the file holds %d", slot, u)
	}
}
