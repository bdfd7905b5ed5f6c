package serve

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/faster-training/faster/loader"
)

// Source produces the batches of an epoch; *loader.Loader is one.
type Source interface {
	IterEpoch(ctx context.Context, epoch int) iter.Seq2[*loader.Batch, error]
}

var _ Source = (*loader.Loader)(nil)

// Options configure Serve. Batch, DType and Shape describe a slot and have
// no default (ForLoader fills them from a loader's options).
type Options struct {
	Slots   int      // ring depth (batches in shared memory); 4
	Dir     string   // directory of the shared-memory file; /dev/shm
	Batch   int      // rows per slot
	DType   string   // "float32" or "uint8"
	Shape   []int    // shape of one row, e.g. [3 224 224]
	Len     int      // distinct samples per epoch, told to the consumer
	Steps   int      // batches per epoch, the same on every rank; told to the consumer
	Samples int      // rows per epoch, repeats included; told to the consumer
	Classes []string // class names, told to the consumer
	Rank    int      // told to the consumer
	World   int      // told to the consumer; 1
}

// ForLoader returns the Options describing the batches of a loader opened
// with lo (after its defaults: pass the same Options given to loader.Open).
func ForLoader(l *loader.Loader, lo loader.Options) Options {
	o := Options{Batch: lo.Batch, Len: l.Len(), Steps: l.StepsPerEpoch(), Samples: l.SamplesPerEpoch(),
		Classes: l.Classes(), Rank: lo.ShardIdx, World: lo.NumShards}
	if o.Batch == 0 {
		o.Batch = 256
	}
	res := l.Resolution(0)
	if lo.Layout == loader.U8HWC {
		o.DType, o.Shape = "uint8", []int{res, res, 3}
	} else {
		o.DType, o.Shape = "float32", []int{3, res, res}
	}
	return o
}

func (o *Options) ensureDefaults() error {
	if o.Slots == 0 {
		o.Slots = 4
	}
	if o.Dir == "" {
		o.Dir = "/dev/shm"
	}
	if o.World == 0 {
		o.World = 1
	}
	var errs []error
	if o.Slots < 1 || o.Slots > 1<<16 {
		errs = append(errs, fmt.Errorf("slots %d: want 1 to 65536", o.Slots))
	}
	if o.Batch < 1 {
		errs = append(errs, fmt.Errorf("batch %d: must be positive", o.Batch))
	}
	if o.DType != "float32" && o.DType != "uint8" {
		errs = append(errs, fmt.Errorf("dtype %q: want float32 or uint8", o.DType))
	}
	if len(o.Shape) == 0 || len(o.Shape) > maxRowDims {
		errs = append(errs, fmt.Errorf("row shape %v: want 1 to %d dimensions", o.Shape, maxRowDims))
	}
	for _, d := range o.Shape {
		if d < 1 {
			errs = append(errs, fmt.Errorf("row shape %v: dimensions must be positive", o.Shape))
			break
		}
	}
	return errors.Join(errs...)
}

// session is one consumer's connection and ring.
type session struct {
	conn  net.Conn
	w     *bufio.Writer
	src   Source
	o     Options
	mem   *shm
	hello Hello

	cmds chan frame    // frames from the consumer
	gone chan struct{} // closed when the consumer's side is closed
	rerr error         // why the reader stopped (read after gone is closed)

	free  []int  // slots the server may write
	held  []bool // slots announced and not yet freed
	ready []byte // scratch for 'R' frames
}

type frame struct {
	typ     byte
	payload []byte
}

// Serve runs one session with the consumer on conn: it creates the
// shared-memory ring, says hello, then runs the epochs the consumer asks
// for, writing their batches from src into free slots. It returns nil when
// the consumer closes the connection, ctx.Err() when ctx is cancelled, and
// otherwise the error that ended the session (also sent to the consumer as
// an 'X' frame). Serve closes conn and removes the shared-memory file
// before it returns, and joins every goroutine it started.
func Serve(ctx context.Context, conn net.Conn, src Source, o Options) (err error) {
	defer conn.Close()
	if err := o.ensureDefaults(); err != nil {
		return err
	}
	rowBytes, labelsOff, slotBytes, size := layout(&o)
	mem, err := createShm(o.Dir, size)
	if err != nil {
		return err
	}
	defer mem.close()
	s := &session{
		conn: conn, w: bufio.NewWriterSize(conn, 64<<10), src: src, o: o, mem: mem,
		cmds: make(chan frame, o.Slots+4), gone: make(chan struct{}),
		held: make([]bool, o.Slots),
	}
	for i := range o.Slots {
		s.free = append(s.free, i)
	}
	s.hello = Hello{
		Version: Version, Path: mem.path, Size: size, Slots: o.Slots, SlotBytes: slotBytes,
		HeaderBytes: HeaderBytes, ImagesOffset: SlotHeader, LabelsOffset: labelsOff,
		Batch: o.Batch, DType: o.DType, Shape: o.Shape, RowBytes: rowBytes,
		Len: o.Len, Steps: o.Steps, Samples: o.Samples, Classes: o.Classes, Rank: o.Rank, World: o.World, PID: os.Getpid(),
	}
	putHeader(mem.mem, &s.hello)

	// The session's context ends with the parent (a signal) or when the
	// consumer's side closes, which also stops a pipeline stuck in I/O.
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.read(ctx)
		cancel(s.goneErr())
	}()
	defer wg.Wait()
	// Closing conn first unblocks the reader; cancel stops its sends.
	defer conn.Close()
	defer cancel(nil)
	// Unblock the reader's Read when the parent is cancelled (a signal).
	stop := context.AfterFunc(parent, func() { conn.Close() })
	defer stop()

	err = s.run(ctx)
	if ctx.Err() != nil && parent.Err() == nil {
		err = context.Cause(ctx) // the consumer left, or sent garbage
	}
	switch {
	case err == nil, errors.Is(err, errConsumerGone):
		return nil
	case parent.Err() != nil:
		return parent.Err()
	}
	// Tell the consumer why, if it still listens.
	if werr := writeFrame(s.w, FrameError, []byte(err.Error())); werr == nil {
		s.w.Flush()
	}
	return err
}

var errConsumerGone = errors.New("serve: consumer closed the connection")

// read forwards the consumer's frames to s.cmds until EOF or an error, then
// closes s.gone.
func (s *session) read(ctx context.Context) {
	defer close(s.gone)
	r := bufio.NewReaderSize(s.conn, 4096)
	for {
		typ, p, err := readFrame(r, nil)
		if err != nil {
			s.rerr = err
			return
		}
		select {
		case s.cmds <- frame{typ, p}:
		case <-ctx.Done():
			s.rerr = ctx.Err()
			return
		}
	}
}

// goneErr reports why the consumer's side ended.
func (s *session) goneErr() error {
	if s.rerr == nil || errors.Is(s.rerr, io.EOF) || errors.Is(s.rerr, net.ErrClosed) || isReset(s.rerr) {
		return errConsumerGone
	}
	if errors.Is(s.rerr, ErrProtocol) {
		return s.rerr
	}
	return fmt.Errorf("%w: %v", errConsumerGone, s.rerr)
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func (s *session) send(typ byte, payload ...[]byte) error {
	if err := writeFrame(s.w, typ, payload...); err != nil {
		return s.writeErr(err)
	}
	if err := s.w.Flush(); err != nil {
		return s.writeErr(err)
	}
	return nil
}

// writeErr turns a failed write to a consumer that went away into
// errConsumerGone.
func (s *session) writeErr(err error) error {
	select {
	case <-s.gone:
		return s.goneErr()
	default:
	}
	if errors.Is(err, net.ErrClosed) || isReset(err) || strings.Contains(err.Error(), "broken pipe") {
		return errConsumerGone
	}
	return err
}

// run says hello and serves epochs until the consumer leaves.
func (s *session) run(ctx context.Context) error {
	h, err := json.Marshal(&s.hello)
	if err != nil {
		return err
	}
	if err := s.send(FrameHello, h); err != nil {
		return err
	}
	for {
		select {
		case f := <-s.cmds:
			if f.typ == FrameEpoch {
				if len(f.payload) != 8 {
					return fmt.Errorf("%w: epoch frame of %d bytes", ErrProtocol, len(f.payload))
				}
				e := int64(binary.LittleEndian.Uint64(f.payload))
				if e < 0 || e > 1<<31 {
					return fmt.Errorf("%w: epoch %d", ErrProtocol, e)
				}
				if err := s.epoch(ctx, int(e)); err != nil {
					return err
				}
				continue
			}
			if _, err := s.handle(f); err != nil {
				return err
			}
		case <-s.gone:
			return s.goneErr()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// handle applies a frame other than 'E'; it reports whether it was a
// cancel.
func (s *session) handle(f frame) (cancel bool, err error) {
	switch f.typ {
	case FrameAttach:
		s.mem.unlink()
	case FrameFree:
		if len(f.payload) != 4 {
			return false, fmt.Errorf("%w: free frame of %d bytes", ErrProtocol, len(f.payload))
		}
		i := int(binary.LittleEndian.Uint32(f.payload))
		if i >= len(s.held) || !s.held[i] {
			return false, fmt.Errorf("%w: free of slot %d, which the consumer does not hold", ErrProtocol, i)
		}
		s.held[i] = false
		s.free = append(s.free, i)
	case FrameCancel:
		return true, nil
	case FrameEpoch:
		return false, fmt.Errorf("%w: epoch requested while one runs", ErrProtocol)
	default:
		return false, fmt.Errorf("%w: unknown frame type %q from the consumer", ErrProtocol, f.typ)
	}
	return false, nil
}

// epoch runs epoch e: every batch goes into a free slot (waiting for one
// while the consumer holds them all), then 'D'.
func (s *session) epoch(ctx context.Context, e int) error {
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	var batches, images int64
	cancelled := false
	// poll applies the frames waiting (or, with block, waits for one).
	poll := func(block bool) error {
		for {
			var f frame
			if block {
				select {
				case f = <-s.cmds:
				case <-s.gone:
					return s.goneErr()
				case <-ctx.Done():
					return ctx.Err()
				}
			} else {
				select {
				case f = <-s.cmds:
				case <-s.gone:
					return s.goneErr()
				default:
					return nil
				}
			}
			c, err := s.handle(f)
			if err != nil {
				return err
			}
			if c {
				cancelled = true
				stop()
			}
			if block {
				return nil
			}
		}
	}
	for b, err := range s.src.IterEpoch(ectx, e) {
		if err != nil {
			if cancelled && ectx.Err() != nil {
				break
			}
			return err
		}
		if err := poll(false); err != nil {
			b.Release()
			return err
		}
		for len(s.free) == 0 && !cancelled {
			if err := poll(true); err != nil {
				b.Release()
				return err
			}
		}
		if cancelled {
			b.Release()
			break
		}
		valid := b.Valid
		err = s.put(e, b)
		b.Release()
		if err != nil {
			return err
		}
		batches++
		images += int64(valid)
	}
	if !cancelled {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	var end [endFixed]byte
	le := binary.LittleEndian
	le.PutUint64(end[0:], uint64(e))
	le.PutUint64(end[8:], uint64(batches))
	le.PutUint64(end[16:], uint64(images))
	if cancelled {
		end[24] = 1
	}
	return s.send(FrameEnd, end[:])
}

// put copies batch b of epoch e into a free slot and announces it.
func (s *session) put(e int, b *loader.Batch) error {
	h := &s.hello
	if b.Valid > h.Batch || len(b.Items) > h.Batch || b.Repeats < 0 || b.Repeats > b.Valid {
		return fmt.Errorf("batch %d has %d rows; slots hold %d", b.Index, len(b.Items), h.Batch)
	}
	if b.Valid > 0 && (b.RowBytes != h.RowBytes || len(b.Data) < b.Valid*h.RowBytes) {
		return fmt.Errorf("batch %d: rows of %d bytes (%d in all); slots hold rows of %d bytes", b.Index, b.RowBytes, len(b.Data), h.RowBytes)
	}
	i := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	slot := s.mem.mem[h.HeaderBytes+int64(i)*h.SlotBytes:][:h.SlotBytes]
	le := binary.LittleEndian
	le.PutUint64(slot[0:], uint64(e))
	le.PutUint64(slot[8:], uint64(b.Index))
	le.PutUint64(slot[16:], uint64(b.Valid))
	le.PutUint64(slot[24:], uint64(len(b.Items)))
	le.PutUint64(slot[32:], uint64(b.Repeats))
	copy(slot[h.ImagesOffset:], b.Data[:b.Valid*h.RowBytes])
	labels := slot[h.LabelsOffset:]
	r := append(s.ready[:0], make([]byte, readyFixed)...)
	le.PutUint32(r[0:], uint32(i))
	le.PutUint64(r[4:], uint64(e))
	le.PutUint64(r[12:], uint64(b.Index))
	le.PutUint32(r[20:], uint32(b.Valid))
	le.PutUint32(r[24:], uint32(len(b.Items)))
	le.PutUint32(r[28:], uint32(b.Repeats))
	for j := range b.Valid {
		it := &b.Items[j]
		le.PutUint64(labels[8*j:], uint64(int64(it.Label)))
		if j > 0 {
			r = append(r, 0)
		}
		r = append(r, it.Key...)
	}
	s.ready = r
	if len(r)+1 > MaxFrame {
		return fmt.Errorf("batch %d: keys of %d bytes exceed a frame", b.Index, len(r))
	}
	s.held[i] = true
	return s.send(FrameReady, r)
}
