//go:build linux

package serve

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"iter"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faster-training/faster/loader"
)

// client is a minimal consumer of the protocol, for tests.
type client struct {
	t     testing.TB
	conn  net.Conn
	r     *bufio.Reader
	hello Hello
	mem   []byte
}

type ready struct {
	slot         int
	epoch, index int
	valid, rows  int
	repeats      int
	keys         []string
}

type end struct {
	epoch, batches, images int
	cancelled              bool
}

// socketpair returns two connected stream sockets.
func socketpair(t testing.TB) (a, b net.Conn) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "sock")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

// start runs Serve on one end of a socket pair in a goroutine and returns
// a client on the other end (after hello, not yet attached) and Serve's
// result channel.
func start(t testing.TB, ctx context.Context, src Source, o Options) (*client, <-chan error) {
	t.Helper()
	a, b := socketpair(t)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, a, src, o) }()
	c := &client{t: t, conn: b, r: bufio.NewReader(b)}
	typ, p := c.recv()
	if typ != FrameHello {
		t.Fatalf("first frame %q, want hello", typ)
	}
	if err := json.Unmarshal(p, &c.hello); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(c.hello.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.mem, err = syscall.Mmap(int(f.Fd()), 0, int(c.hello.Size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(c.mem); c.conn.Close() })
	return c, done
}

func (c *client) recv() (byte, []byte) {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, p, err := readFrame(c.r, nil)
	if err != nil {
		c.t.Fatalf("client read: %v", err)
	}
	return typ, p
}

// poll returns the next frame if one comes within d.
func (c *client) poll(d time.Duration) (byte, []byte, bool) {
	c.conn.SetReadDeadline(time.Now().Add(d))
	typ, p, err := readFrame(c.r, nil)
	if err != nil {
		return 0, nil, false
	}
	return typ, p, true
}

func (c *client) send(typ byte, p []byte) {
	c.t.Helper()
	if err := writeFrame(c.conn, typ, p); err != nil {
		c.t.Fatalf("client write: %v", err)
	}
}

func (c *client) attach() { c.send(FrameAttach, nil) }

func (c *client) epoch(e int) {
	c.send(FrameEpoch, binary.LittleEndian.AppendUint64(nil, uint64(e)))
}

func (c *client) free(slot int) {
	c.send(FrameFree, binary.LittleEndian.AppendUint32(nil, uint32(slot)))
}

func parseReady(t testing.TB, typ byte, p []byte) ready {
	t.Helper()
	if typ != FrameReady {
		t.Fatalf("frame %q (%s), want ready", typ, p)
	}
	le := binary.LittleEndian
	r := ready{slot: int(le.Uint32(p)), epoch: int(le.Uint64(p[4:])), index: int(le.Uint64(p[12:])),
		valid: int(le.Uint32(p[20:])), rows: int(le.Uint32(p[24:])), repeats: int(le.Uint32(p[28:]))}
	if r.valid > 0 {
		r.keys = strings.Split(string(p[readyFixed:]), "\x00")
	}
	return r
}

func parseEnd(t testing.TB, typ byte, p []byte) end {
	t.Helper()
	if typ != FrameEnd {
		t.Fatalf("frame %q (%s), want end", typ, p)
	}
	le := binary.LittleEndian
	return end{int(le.Uint64(p)), int(le.Uint64(p[8:])), int(le.Uint64(p[16:])), p[24] == 1}
}

// images and labels of slot r as the consumer sees them.
func (c *client) images(r ready) []byte {
	h := &c.hello
	base := h.HeaderBytes + int64(r.slot)*h.SlotBytes
	return c.mem[base+h.ImagesOffset:][:r.valid*h.RowBytes]
}

func (c *client) labels(r ready) []int {
	h := &c.hello
	base := h.HeaderBytes + int64(r.slot)*h.SlotBytes + h.LabelsOffset
	out := make([]int, r.valid)
	for i := range out {
		out[i] = int(int64(binary.LittleEndian.Uint64(c.mem[base+int64(8*i):])))
	}
	return out
}

// fakeSource yields n batches of size rows of rowBytes per epoch, each
// filled with a byte derived from (epoch, batch, row); the last batch has
// last rows if last > 0.
type fakeSource struct {
	n, size, rowBytes, last int
	failAt                  int // yield an error instead of batch failAt (if > 0)
	stallAt                 int // wait for ctx to end instead of batch stallAt (if > 0)
}

func fill(e, b, r int) byte { return byte(e*31 + b*7 + r) }

func (f fakeSource) IterEpoch(ctx context.Context, e int) iter.Seq2[*loader.Batch, error] {
	return func(yield func(*loader.Batch, error) bool) {
		for b := range f.n {
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				return
			}
			if f.stallAt > 0 && b == f.stallAt {
				<-ctx.Done() // storage that hangs
				yield(nil, ctx.Err())
				return
			}
			if f.failAt > 0 && b == f.failAt {
				yield(nil, fmt.Errorf("bad image in batch %d", b))
				return
			}
			rows := f.size
			if b == f.n-1 && f.last > 0 {
				rows = f.last
			}
			mb := &loader.Batch{Valid: rows, Index: b, RowBytes: f.rowBytes, Data: make([]byte, f.size*f.rowBytes)}
			for r := range rows {
				mb.Items = append(mb.Items, loader.Item{Key: fmt.Sprintf("e%d/b%d/r%d", e, b, r), Label: b*100 + r})
				for i := range f.rowBytes {
					mb.Data[r*f.rowBytes+i] = fill(e, b, r)
				}
			}
			if !yield(mb, nil) {
				return
			}
		}
	}
}

func fakeOptions(t testing.TB, f fakeSource, slots int) Options {
	return Options{Slots: slots, Dir: t.TempDir(), Batch: f.size, DType: "uint8", Shape: []int{f.rowBytes}, Len: f.n * f.size}
}

// checkGoroutines fails if the goroutine count does not come back to
// before within 10 s (a bound for a loaded machine: they exit at once).
func checkGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shmFiles lists the shared-memory files in dir.
func shmFiles(t testing.TB, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), shmPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func (c *client) nextReady() ready {
	c.t.Helper()
	typ, p := c.recv()
	return parseReady(c.t, typ, p)
}

func (c *client) nextEnd() end {
	c.t.Helper()
	typ, p := c.recv()
	return parseEnd(c.t, typ, p)
}
