//go:build linux

package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/faster-training/faster/loader"
)

// shmDecoder is the host stand-in of a device batch decoder: the CPU
// stand-in's decode (loader.CPUBatchDecoder) into buffers that are
// shared-memory files, exported as HandleShm, so a consumer in another
// process maps them as it would open a GPU's IPC handles.
type shmDecoder struct {
	cpu loader.CPUBatchDecoder
	dir string

	mu   sync.Mutex
	live map[*shmBuffer]bool
}

type shmBuffer struct {
	name string
	mem  []byte
}

func (b *shmBuffer) Size() int    { return len(b.mem) }
func (b *shmBuffer) Host() []byte { return b.mem }
func (b *shmBuffer) Export() (string, []byte, error) {
	return HandleShm, []byte(b.name), nil
}

var _ ExportableBuffer = (*shmBuffer)(nil)

func (d *shmDecoder) Device() string { return "cpu" }

func (d *shmDecoder) Alloc(n int) (loader.BatchBuffer, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	name := fmt.Sprintf("faster-devtest-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(filepath.Join(d.dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(int64(n)); err != nil {
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	b := &shmBuffer{name: name, mem: mem}
	d.mu.Lock()
	d.live[b] = true
	d.mu.Unlock()
	return b, nil
}

func (d *shmDecoder) Free(bb loader.BatchBuffer) error {
	b, ok := bb.(*shmBuffer)
	d.mu.Lock()
	ok = ok && d.live[b]
	delete(d.live, b)
	d.mu.Unlock()
	if !ok {
		return errors.New("shm stand-in: free of a buffer it did not give (or twice)")
	}
	os.Remove(filepath.Join(d.dir, b.name))
	return syscall.Munmap(b.mem)
}

func (d *shmDecoder) Live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}

func (d *shmDecoder) Close() error { return nil }

func (d *shmDecoder) DecodeBatch(ctx context.Context, jobs []*loader.DecodeJob, dst loader.BatchBuffer, f loader.RowFormat) (loader.BatchReport, error) {
	return d.cpu.DecodeBatch(ctx, jobs, dst, f)
}

// openStandIn opens a loader whose batch-decode stage is the shm stand-in
// (injected through Options.NewBatchDecoder) and Serve's options for it.
func openStandIn(t *testing.T, data string, lo loader.Options) (*loader.Loader, *shmDecoder, Options) {
	t.Helper()
	d := &shmDecoder{dir: "/dev/shm", live: map[*shmBuffer]bool{}}
	if _, err := os.Stat(d.dir); err != nil {
		t.Skipf("no %s: %v", d.dir, err)
	}
	lo.NewBatchDecoder = func(loader.DecoderConfig) (loader.BatchDecoder, error) { return d, nil }
	l, err := loader.Open(data, lo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A test that failed before its own Close leaves no file behind.
		l.Close()
		d.mu.Lock()
		for b := range d.live {
			os.Remove(filepath.Join(d.dir, b.name))
		}
		d.mu.Unlock()
	})
	o := ForLoader(l, lo)
	o.Dir, o.Slots = t.TempDir(), 2 // Slots: replaced by the stage's ring
	o.Counters = &Counters{}
	return l, d, o
}

// devClient is a consumer of the device ring: the test client plus the
// DEVICE frame's buffers, mapped by name.
type devClient struct {
	*client
	ordinal   int
	slotBytes int
	bufs      [][]byte
}

func startDevice(t *testing.T, ctx context.Context, src Source, o Options) (*devClient, <-chan error) {
	t.Helper()
	c, done := start(t, ctx, src, o)
	if c.hello.Device != "cpu" || c.hello.Handles != HandleShm || c.hello.Version != Version {
		t.Fatalf("hello: device %q handles %q version %d; want cpu, %s, %d", c.hello.Device, c.hello.Handles, c.hello.Version, HandleShm, Version)
	}
	if c.hello.LabelsOffset != SlotHeader {
		t.Fatalf("a device slot's labels at %d: want %d (no images area)", c.hello.LabelsOffset, SlotHeader)
	}
	typ, p := c.recv()
	if typ != FrameDevice {
		t.Fatalf("frame %q after hello, want the device frame", typ)
	}
	le := binary.LittleEndian
	dc := &devClient{client: c, ordinal: int(le.Uint32(p)), slotBytes: int(le.Uint64(p[8:]))}
	n := int(le.Uint32(p[4:]))
	if n != c.hello.Slots || len(p) != deviceFixed+n*IPCHandleBytes {
		t.Fatalf("device frame of %d bytes for %d slots; hello says %d slots", len(p), n, c.hello.Slots)
	}
	for i := range n {
		name := string(bytes.TrimRight(p[deviceFixed+i*IPCHandleBytes:][:IPCHandleBytes], "\x00"))
		f, err := os.Open(filepath.Join("/dev/shm", name))
		if err != nil {
			t.Fatalf("slot %d's handle: %v", i, err)
		}
		m, err := syscall.Mmap(int(f.Fd()), 0, dc.slotBytes, syscall.PROT_READ, syscall.MAP_SHARED)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Munmap(m) })
		dc.bufs = append(dc.bufs, m)
	}
	return dc, done
}

func (c *devClient) digest(r ready) string {
	return batchDigest(c.bufs[r.slot][:r.valid*c.hello.RowBytes], c.labels(r), r.keys)
}

// servedDigests serves epochs 0 and 1 of a CPU-path loader and digests
// each batch the consumer sees.
func servedDigests(t *testing.T, data string, lo loader.Options) [2][]string {
	l, err := loader.Open(data, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := ForLoader(l, lo)
	o.Dir, o.Slots = t.TempDir(), 2
	c, done := start(t, context.Background(), l, o)
	if c.hello.Device != "" {
		t.Fatalf("the CPU path's hello names device %q", c.hello.Device)
	}
	c.attach()
	var out [2][]string
	for e := range 2 {
		c.epoch(e)
		for {
			typ, p := c.recv()
			if typ == FrameEnd {
				break
			}
			r := parseReady(t, typ, p)
			out[e] = append(out[e], batchDigest(c.images(r), c.labels(r), r.keys))
			c.free(r.slot)
		}
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return out
}

// The device ring on the host stand-in: epochs 0 and 1 served from the
// batch-decode stage's buffers are the CPU path's served batches (same
// keys, labels and bytes). The consumer holds two batches at a time and
// digests each only when it frees it, so a slot reused before its 'F'
// would change a digest; no announced slot is one it holds. Then an early
// break (cancel while holding a slot): the epoch ends cancelled, and the
// next runs in full. Every announced batch goes back to the stage, every
// buffer is freed at Close, and no goroutine is left.
func TestServeDeviceStandIn(t *testing.T) {
	data := makeTree(t, 7)
	lo := loader.Options{Transform: loader.Train, Resolution: 16, Batch: 4, Seed: 5, Workers: 2, Layout: loader.U8HWC}
	want := servedDigests(t, data, lo)
	before := runtime.NumGoroutine()
	l, d, o := openStandIn(t, data, lo)
	c, done := startDevice(t, context.Background(), l, o)
	if c.hello.Slots != l.RingSize() || c.slotBytes != lo.Batch*c.hello.RowBytes {
		t.Fatalf("%d slots of %d bytes; want the stage's %d of %d", c.hello.Slots, c.slotBytes, l.RingSize(), lo.Batch*c.hello.RowBytes)
	}
	c.attach()
	const hold = 2
	for e := range 2 {
		c.epoch(e)
		var got []string
		var held []ready
		inHand := map[int]bool{}
		freeOldest := func() {
			r := held[0]
			held = held[1:]
			got = append(got, c.digest(r))
			delete(inHand, r.slot)
			c.free(r.slot)
		}
		for {
			typ, p := c.recv()
			if typ == FrameEnd {
				if en := parseEnd(t, typ, p); en.cancelled || en.batches != len(want[e]) {
					t.Fatalf("epoch %d: end %+v, want %d batches", e, en, len(want[e]))
				}
				break
			}
			r := parseReady(t, typ, p)
			if inHand[r.slot] {
				t.Fatalf("epoch %d batch %d: slot %d announced while the consumer holds it", e, r.index, r.slot)
			}
			inHand[r.slot] = true
			held = append(held, r)
			if len(held) > hold {
				freeOldest()
			}
		}
		for len(held) > 0 {
			freeOldest()
		}
		if strings.Join(got, " ") != strings.Join(want[e], " ") {
			t.Fatalf("epoch %d: the device ring's batches differ from the CPU path's:\n got %v\nwant %v", e, got, want[e])
		}
	}

	// Early break: one batch taken and held, then cancel.
	c.epoch(2)
	first := c.nextReady()
	c.send(FrameCancel, nil)
	for {
		typ, p := c.recv()
		if typ == FrameEnd {
			if en := parseEnd(t, typ, p); !en.cancelled {
				t.Fatalf("cancelled epoch: end %+v", en)
			}
			break
		}
		c.free(parseReady(t, typ, p).slot)
	}
	c.free(first.slot)
	c.epoch(3)
	n := 0
	for {
		typ, p := c.recv()
		if typ == FrameEnd {
			break
		}
		c.free(parseReady(t, typ, p).slot)
		n++
	}
	if n != len(want[0]) {
		t.Fatalf("the epoch after a break served %d batches, want %d", n, len(want[0]))
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b, r := o.Counters.Batches.Load(), o.Counters.Released.Load(); b != r || b == 0 {
		t.Fatalf("%d batches announced, %d given back to the stage", b, r)
	}
	if err := l.Close(); err != nil { // it names staged batches not released
		t.Fatal(err)
	}
	if n := d.Live(); n != 0 {
		t.Fatalf("%d stage buffers not freed at Close", n)
	}
	checkGoroutines(t, before)
}

// A session that ends (the parent's context cancelled) while the consumer
// holds device slots gives them back to the stage: none leaks, and the
// stage's buffers are all freed at Close.
func TestServeDeviceCancelHolding(t *testing.T) {
	data := makeTree(t, 7)
	lo := loader.Options{Transform: loader.Eval, Resolution: 16, Batch: 2, Workers: 2}
	before := runtime.NumGoroutine()
	l, d, o := openStandIn(t, data, lo)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, done := startDevice(t, ctx, l, o)
	c.attach()
	c.epoch(0)
	c.nextReady()
	c.nextReady() // both held, never freed
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v, want context.Canceled", err)
	}
	if b, r := o.Counters.Batches.Load(), o.Counters.Released.Load(); b != r || b < 2 {
		t.Fatalf("%d batches announced, %d given back to the stage", b, r)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := d.Live(); n != 0 {
		t.Fatalf("%d stage buffers not freed at Close", n)
	}
	checkGoroutines(t, before)
}

// A consumer's free of a device slot it does not hold is a protocol error
// that ends the session, naming the slot.
func TestServeDeviceBadFree(t *testing.T) {
	data := makeTree(t, 3)
	lo := loader.Options{Transform: loader.Eval, Resolution: 16, Batch: 2, Workers: 1}
	l, _, o := openStandIn(t, data, lo)
	defer l.Close()
	c, done := startDevice(t, context.Background(), l, o)
	c.attach()
	c.free(1)
	err := <-done
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "device slot 1") {
		t.Fatalf("Serve returned %v, want a protocol error naming device slot 1", err)
	}
}

// A stage whose buffers cannot be exported (the plain CPU stand-in's
// host memory) is refused before the hello, by device and type.
func TestServeDeviceNotExportable(t *testing.T) {
	data := makeTree(t, 3)
	lo := loader.Options{Transform: loader.Eval, Resolution: 16, Batch: 2, Workers: 1}
	var d loader.CPUBatchDecoder
	lo.NewBatchDecoder = func(loader.DecoderConfig) (loader.BatchDecoder, error) { return &d, nil }
	l, err := loader.Open(data, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := ForLoader(l, lo)
	o.Dir = t.TempDir()
	a, b := socketpair(t)
	defer b.Close()
	err = Serve(context.Background(), a, l, o)
	if err == nil || !strings.Contains(err.Error(), "cannot be shared with another process") {
		t.Fatalf("Serve returned %v, want a refusal of unshareable buffers", err)
	}
	if files := shmFiles(t, o.Dir); len(files) != 0 {
		t.Fatalf("shared-memory files left: %v", files)
	}
}

// The Python client repeats the device ring's constants
// (python/faster/_protocol.py): the version, the frame type, the handle
// kinds and sizes.
func TestPythonProtocolRepeatsDevice(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "python", "faster", "_protocol.py"))
	if err != nil {
		t.Fatal(err)
	}
	py := string(src)
	for _, want := range []string{
		fmt.Sprintf("\nVERSION = %d\n", Version),
		fmt.Sprintf("DEVICE = b%q\n", string(FrameDevice)),
		fmt.Sprintf("HANDLE_CUDA = %q\n", HandleCUDA),
		fmt.Sprintf("HANDLE_SHM = %q\n", HandleShm),
		fmt.Sprintf("IPC_HANDLE_BYTES = %d ", IPCHandleBytes),
		fmt.Sprintf("MAX_DEVICE_SLOTS = %d\n", maxDeviceSlots),
		`DEVICE_FIXED = struct.Struct("<IIQ")`, // deviceFixed: 4 + 4 + 8
	} {
		if !strings.Contains(py, want) {
			t.Errorf("_protocol.py lacks %q", want)
		}
	}
	if deviceFixed != 16 {
		t.Errorf("deviceFixed %d, _protocol.py's <IIQ is 16", deviceFixed)
	}
}
