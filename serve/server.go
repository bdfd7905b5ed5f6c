package serve

import (
	"bufio"
	"bytes"
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
	"sync/atomic"
	"time"

	"github.com/faster-training/faster/internal/usage"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/pipeline"
)

// Source produces the batches of an epoch; *loader.Loader is one. The
// context Serve passes carries the ring as a pipeline.Allocator
// (pipeline.WithAllocator): a Source built on a pipeline Batch stage with an
// Arena, as a loader is, writes its rows straight into the slots. A Source
// must not touch a batch's memory once its iteration has returned.
type Source interface {
	IterEpoch(ctx context.Context, epoch int) iter.Seq2[*loader.Batch, error]
}

var _ Source = (*loader.Loader)(nil)

// A Source may also be one of these (a *loader.Loader is all of them):
// Serve then tells the consumer the position each batch reaches, resumes
// an epoch from a state the consumer sends, and ends each epoch with the
// pipeline's statistics.
type (
	positioner interface {
		Consumed(b *loader.Batch) int
	}
	resumer interface {
		SetResume(loader.State) error
	}
	statser interface {
		Stats() pipeline.Stats
		CeilingOf(pipeline.Stats) loader.Ceiling
	}
)

var (
	_ positioner = (*loader.Loader)(nil)
	_ resumer    = (*loader.Loader)(nil)
	_ statser    = (*loader.Loader)(nil)
)

// EpochStats is the JSON that follows an end frame's fixed part: the
// pipeline's statistics over the epochs it has run (per stage, and the
// verdict) and the loader's ceiling.
type EpochStats struct {
	Stats   pipeline.Stats `json:"stats"`
	Ceiling loader.Ceiling `json:"ceiling"`
	// CPUSeconds is the server process's CPU time (user + system, all
	// threads) from the epoch's request to its last batch: the loading
	// work's price, whatever else runs on the machine. Images are the
	// rows served in that time (repeats included); CPUPer1000 is
	// CPUSeconds per 1,000 of them (0 without images).
	CPUSeconds float64 `json:"cpu_seconds"`
	Images     int64   `json:"images"`
	CPUPer1000 float64 `json:"cpu_seconds_per_1000_images"`
}

// Options configure Serve. Batch, DType and Shape describe a slot and have
// no default (ForLoader fills them from a loader's options).
type Options struct {
	Slots   int      // ring depth (batches in shared memory, those a loader is decoding into included); 4
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
	// Told to the consumer (Hello): the order's facts a client saves a
	// position with.
	DatasetLen  int
	PerRank     []int
	Kind        string
	Root        string // an ImageFolder's folder of class folders (root/<split>)
	Seed        uint64
	Shuffle     bool
	Stream      bool
	Drop        bool
	Exact       bool
	Fingerprint string
	Sampler     string
	Repeats     int
	Workers     int // decode threads (Hello.Workers)
	// Counters, if set, is where the session counts what it served and
	// how (rows written in place or copied).
	Counters *Counters
	// CPU reads the process's CPU time for EpochStats.CPUSeconds;
	// usage.CPU when nil (tests inject one).
	CPU func() time.Duration
}

// Counters count a session's batches. With a loader as the Source every
// batch is decoded straight into its slot and CopiedBytes stays 0; a
// Source whose batches have memory of their own is copied into the slots.
type Counters struct {
	Batches     atomic.Int64 // batches announced
	InPlace     atomic.Int64 // of them, written straight into their slot
	CopiedBytes atomic.Int64 // bytes of rows copied into slots
	// Released counts a device ring's announced batches given back to the
	// batch-decode stage (the consumer freed the slot, or the session
	// ended): equal to Batches once a session has returned.
	Released atomic.Int64
}

// ForLoader returns the Options describing the batches of a loader opened
// with lo (after its defaults: pass the same Options given to loader.Open).
func ForLoader(l *loader.Loader, lo loader.Options) Options {
	o := Options{Batch: lo.Batch, Len: l.Len(), Steps: l.StepsPerEpoch(), Samples: l.SamplesPerEpoch(),
		Classes: l.Classes(), Rank: lo.ShardIdx, World: lo.NumShards,
		DatasetLen: l.DatasetLen(), PerRank: l.PerRank(), Kind: l.Kind(), Root: l.Root(), Seed: lo.Seed, Shuffle: l.Shuffles(),
		Stream: !l.Indexed(), Drop: lo.Drop, Exact: lo.Exact, Fingerprint: l.Fingerprint(),
		Sampler: lo.Sampler, Repeats: lo.Repeats, Workers: lo.Workers}
	if o.Batch == 0 {
		o.Batch = 256
	}
	c, h, w := l.Shape(0) // the channels follow the data and the recipe (Grayscale(1): 1)
	if lo.Layout == loader.U8HWC {
		o.DType, o.Shape = "uint8", []int{h, w, c}
	} else {
		o.DType, o.Shape = "float32", []int{c, h, w}
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

	ring *ring
	// stage and dev are set when the rows come from the loader's
	// batch-decode stage (device.go): then ring is unused.
	stage  stager
	dev    *devRing
	epochs chan epochReq // epochs the consumer asked for ('E')
	gone   chan struct{} // closed when the consumer's side is closed
	rerr   error         // why the reader stopped (read after gone is closed)

	// The reader applies 'F' and 'C' itself (the server may be waiting
	// for a batch whose stage waits for a slot); mu guards the epoch's
	// cancellation state it shares with the server.
	mu        sync.Mutex
	requested int                // epochs asked for
	finished  int                // epochs ended ('D' about to go or sent)
	cancelReq int                // the last epoch the consumer cancelled
	stop      context.CancelFunc // stops the running epoch (requested-th), or nil
	cancelled bool               // the running epoch was cancelled

	// The seed and the order the consumer sent for its next epoch ('S',
	// 'O'), taken by its 'E'; guarded by mu.
	seed  *uint64
	order []int

	ready    []byte // scratch for 'R' frames
	consumed int    // positions of this rank's order served this epoch (loader.Consumed)
}

// cpu is the process's CPU time so far, by Options.CPU.
func (s *session) cpu() time.Duration {
	if s.o.CPU != nil {
		return s.o.CPU()
	}
	return usage.CPU()
}

// epochReq is an 'E' frame: the epoch, and the state it resumes from (nil:
// from its start); refuse, if set, is why it cannot run.
type epochReq struct {
	epoch  int64
	state  []byte
	refuse error
	seed   *uint64 // the consumer's seed ('S'), if it sent one
	order  []int   // the consumer's order ('O'), if it sent one
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
	st, isStaged := staged(src)
	var dev *devRing
	if isStaged {
		// The stage's ring is the session's: one slot per buffer.
		var err error
		if dev, err = openDevRing(st); err != nil {
			return err
		}
		// Deferred first, so it runs last: after the reader is joined, no
		// free can race it; the slots the consumer still holds go back.
		defer dev.releaseAll()
		o.Slots, dev.counters = len(dev.handles), o.Counters
	}
	if err := o.ensureDefaults(); err != nil {
		return err
	}
	rowBytes, labelsOff, slotBytes, size := layout(&o, isStaged)
	mem, err := createShm(o.Dir, size, HeaderBytes)
	if err != nil {
		return err
	}
	defer mem.close()
	s := &session{
		conn: conn, w: bufio.NewWriterSize(conn, 64<<10), src: src, o: o, mem: mem,
		epochs: make(chan epochReq, 1), gone: make(chan struct{}), dev: dev,
	}
	if isStaged {
		s.stage = st
		if err := mem.reserve(HeaderBytes, size-HeaderBytes); err != nil { // headers and labels only: small
			return err
		}
	}
	s.hello = Hello{
		Version: Version, Path: mem.path, Size: size, Slots: o.Slots, SlotBytes: slotBytes,
		HeaderBytes: HeaderBytes, ImagesOffset: SlotHeader, LabelsOffset: labelsOff,
		Batch: o.Batch, DType: o.DType, Shape: o.Shape, RowBytes: rowBytes,
		Len: o.Len, Steps: o.Steps, Samples: o.Samples, Classes: o.Classes, Rank: o.Rank, World: o.World, PID: os.Getpid(),
		DatasetLen: o.DatasetLen, PerRank: o.PerRank, Kind: o.Kind, Root: o.Root, Seed: o.Seed, Shuffle: o.Shuffle, Stream: o.Stream,
		Drop: o.Drop, Exact: o.Exact, StateVersion: loader.StateVersion, Fingerprint: o.Fingerprint,
		Sampler: o.Sampler, Repeats: o.Repeats, Workers: o.Workers,
	}
	if dev != nil {
		s.hello.Device, s.hello.Handles = dev.device, dev.kind
	}
	putHeader(mem.mem, &s.hello)
	s.ring = newRing(mem.mem, &s.hello)
	s.ring.reserve = mem.reserve

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
	if parent.Err() != nil {
		// Before anything else: cancelling the parent closes conn, so
		// the run may have seen the consumer "leave" rather than ctx end.
		return parent.Err()
	}
	if ctx.Err() != nil {
		err = context.Cause(ctx) // the consumer left, or sent garbage
	}
	if err == nil || errors.Is(err, errConsumerGone) {
		return nil
	}
	// Tell the consumer why, if it still listens.
	if werr := writeFrame(s.w, FrameError, []byte(err.Error())); werr == nil {
		s.w.Flush()
	}
	return err
}

var errConsumerGone = errors.New("serve: consumer closed the connection")

// read applies the consumer's frames until EOF or an error, then closes
// s.gone: 'A', 'F' and 'C' here, 'E' passed on to the server's loop.
func (s *session) read(ctx context.Context) {
	defer close(s.gone)
	r := bufio.NewReaderSize(s.conn, 4096)
	var buf []byte
	for {
		typ, p, err := readFrame(r, buf)
		if err == nil {
			buf = p[:0]
			err = s.apply(ctx, typ, p)
		}
		if err != nil {
			s.rerr = err
			return
		}
	}
}

// apply applies one frame from the consumer.
func (s *session) apply(ctx context.Context, typ byte, p []byte) error {
	switch typ {
	case FrameAttach:
		s.mem.unlink()
	case FrameFree:
		if len(p) != 4 {
			return fmt.Errorf("%w: free frame of %d bytes", ErrProtocol, len(p))
		}
		if s.dev != nil {
			return s.dev.consumerFree(int(binary.LittleEndian.Uint32(p)))
		}
		return s.ring.consumerFree(int(binary.LittleEndian.Uint32(p)))
	case FrameCancel:
		s.mu.Lock()
		if s.requested > s.finished { // else no epoch runs: nothing to stop
			s.cancelReq = s.requested
			if s.stop != nil {
				s.cancelled = true
				s.stop()
			}
		}
		s.mu.Unlock()
	case FrameSeed:
		if len(p) != 8 {
			return fmt.Errorf("%w: seed frame of %d bytes", ErrProtocol, len(p))
		}
		seed := binary.LittleEndian.Uint64(p)
		s.mu.Lock()
		s.seed = &seed
		s.mu.Unlock()
	case FrameOrder:
		if len(p)%8 != 0 {
			return fmt.Errorf("%w: order frame of %d bytes (int64 positions)", ErrProtocol, len(p))
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.order)+len(p)/8 > loader.MaxOrder {
			return fmt.Errorf("%w: an epoch's order of more than %d positions", ErrProtocol, loader.MaxOrder)
		}
		if s.order == nil {
			s.order = make([]int, 0, len(p)/8)
		}
		for i := 0; i < len(p); i += 8 {
			s.order = append(s.order, int(int64(binary.LittleEndian.Uint64(p[i:]))))
		}
	case FrameEpoch:
		if len(p) < 8 {
			return fmt.Errorf("%w: epoch frame of %d bytes", ErrProtocol, len(p))
		}
		e := int64(binary.LittleEndian.Uint64(p))
		var state []byte
		if len(p) > 8 {
			state = bytes.Clone(p[8:]) // p is the reader's buffer
		}
		var refuse error
		if e < 0 || e > loader.MaxEpoch {
			// The consumer's input, not a broken frame: refused, and
			// the session goes on.
			refuse = fmt.Errorf("epoch %d: want 0 to %d", e, loader.MaxEpoch)
		}
		s.mu.Lock()
		busy := s.requested > s.finished
		if !busy {
			s.requested++
		}
		seed, order := s.seed, s.order
		s.seed, s.order = nil, nil
		s.mu.Unlock()
		if busy {
			return fmt.Errorf("%w: epoch requested while one runs", ErrProtocol)
		}
		select {
		case s.epochs <- epochReq{e, state, refuse, seed, order}: // never blocks: one epoch at a time
		case <-ctx.Done():
			return ctx.Err()
		}
	default:
		return fmt.Errorf("%w: unknown frame type %q from the consumer", ErrProtocol, typ)
	}
	return nil
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
	if s.dev != nil {
		if err := s.send(FrameDevice, s.dev.frame()); err != nil {
			return err
		}
	}
	for {
		select {
		case req := <-s.epochs:
			err := req.refuse
			if err == nil {
				err = s.prepare(req)
			}
			if err == nil && req.state != nil {
				err = s.resume(req.state)
			}
			if err != nil {
				// The consumer's epoch or state: refused, the session
				// goes on (a client's state never ends the server).
				if err := s.refuse(err); err != nil {
					return err
				}
				continue
			}
			if err := s.epoch(ctx, int(req.epoch)); err != nil {
				return err
			}
		case <-s.gone:
			return s.goneErr()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// refuse ends an epoch request that cannot run, telling the consumer why
// ('N'); the session goes on.
func (s *session) refuse(why error) error {
	s.mu.Lock()
	s.finished = s.requested // before 'N': the consumer may ask again at once
	s.mu.Unlock()
	return s.send(FrameRefused, []byte(why.Error()))
}

// resume makes the next epoch continue from the state the consumer sent.
func (s *session) resume(b []byte) error {
	r, ok := s.src.(resumer)
	if !ok {
		return fmt.Errorf("serve: this source cannot resume from a state")
	}
	var st loader.State
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '[' { // every rank's state
		states, err := parseStates(b)
		if err != nil {
			return err
		}
		if st, err = loader.MergeStates(states...); err != nil {
			return err
		}
	} else {
		var err error
		if st, err = loader.ParseState(b, "the consumer's state"); err != nil {
			return err
		}
	}
	return r.SetResume(st)
}

// parseStates decodes a JSON array of every rank's state, one element at a
// time, refusing more than loader.MaxWorld of them before decoding the
// next (a frame of "{}," repeated would otherwise hold millions).
func parseStates(b []byte) ([]loader.State, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // '['
		return nil, fmt.Errorf("the consumer's states: %w", err)
	}
	var states []loader.State
	for i := 0; dec.More(); i++ {
		if i == loader.MaxWorld {
			return nil, fmt.Errorf("the consumer's states: more than %d (one per rank)", loader.MaxWorld)
		}
		var m json.RawMessage
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("the consumer's states: %w", err)
		}
		st, err := loader.ParseState(m, fmt.Sprintf("the consumer's state %d", i))
		if err != nil {
			return nil, err
		}
		states = append(states, st)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, fmt.Errorf("the consumer's states: %w", err)
	}
	if dec.More() {
		return nil, errors.New("the consumer's states: data after the list")
	}
	return states, nil
}

// epoch runs epoch e: every batch goes into a slot (its stage waiting for
// one while the consumer holds them all), then 'D'.
func (s *session) epoch(ctx context.Context, e int) error {
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	s.mu.Lock()
	s.stop, s.cancelled = stop, s.cancelReq == s.requested
	if s.cancelled {
		stop() // cancelled before it started
	}
	s.mu.Unlock()
	isCancelled := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.cancelled
	}
	var batches, images int64
	s.consumed = 0
	cpu0 := s.cpu()
	err := func() error {
		if s.stage != nil {
			return s.iterStaged(ectx, e, isCancelled, &batches, &images)
		}
		defer s.ring.reclaim() // what the pipeline dropped unreleased, once it has returned
		for b, err := range s.src.IterEpoch(pipeline.WithAllocator(ectx, s.ring), e) {
			if err != nil {
				if ectx.Err() != nil && isCancelled() {
					return nil
				}
				return err
			}
			if isCancelled() {
				b.Release()
				return nil
			}
			valid := b.Valid
			err = s.put(ectx, e, b)
			b.Release()
			if err != nil {
				if ectx.Err() != nil && isCancelled() {
					return nil
				}
				return err
			}
			batches++
			images += int64(valid)
		}
		return nil
	}()
	s.mu.Lock()
	cancelled := s.cancelled
	s.stop, s.cancelled = nil, false
	s.finished = s.requested // before 'D': the consumer may ask for the next at once
	s.mu.Unlock()
	if err != nil {
		return err
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
	var stats []byte
	if st, ok := s.src.(statser); ok {
		ps := st.Stats()
		es := EpochStats{Stats: ps, Ceiling: st.CeilingOf(ps), CPUSeconds: (s.cpu() - cpu0).Seconds(), Images: images}
		if images > 0 {
			es.CPUPer1000 = es.CPUSeconds / float64(images) * 1000
		}
		if stats, err = json.Marshal(es); err != nil {
			return err
		}
	}
	return s.send(FrameEnd, end[:], stats)
}

// put announces batch b of epoch e in its slot: the one its rows were
// written into, or, for a batch with memory of its own, a free slot it is
// copied into (waiting for one while the consumer holds them all).
func (s *session) put(ctx context.Context, e int, b *loader.Batch) error {
	h := &s.hello
	if b.Valid > h.Batch || len(b.Items) > h.Batch || b.Repeats < 0 || b.Repeats > b.Valid {
		return fmt.Errorf("batch %d has %d rows; slots hold %d", b.Index, len(b.Items), h.Batch)
	}
	if b.Valid > 0 && (b.RowBytes != h.RowBytes || len(b.Data) < b.Valid*h.RowBytes) {
		return fmt.Errorf("batch %d: rows of %d bytes (%d in all); slots hold rows of %d bytes", b.Index, b.RowBytes, len(b.Data), h.RowBytes)
	}
	n := b.Valid * h.RowBytes
	data, id, inPlace := b.Detach()
	if inPlace {
		if n > 0 && &data[0] != &s.ring.slot(id & 0xffff)[h.ImagesOffset] {
			s.ring.Free(id)
			return fmt.Errorf("batch %d: memory that is not its slot's", b.Index)
		}
	} else {
		var dst []byte
		var err error
		dst, id, err = s.ring.Alloc(ctx, n)
		if err != nil {
			return err
		}
		copy(dst, b.Data[:n])
		if c := s.o.Counters; c != nil {
			c.CopiedBytes.Add(int64(n))
		}
	}
	i, err := s.ring.announce(id)
	if err != nil {
		return err
	}
	if c := s.o.Counters; c != nil {
		c.Batches.Add(1)
		if inPlace {
			c.InPlace.Add(1)
		}
	}
	return s.announce(i, e, b)
}

// announce writes batch b's slot header and labels into slot i of the file
// and sends its 'R' frame.
func (s *session) announce(i, e int, b *loader.Batch) error {
	h := &s.hello
	slot := s.mem.mem[h.HeaderBytes+int64(i)*h.SlotBytes:][:h.SlotBytes]
	le := binary.LittleEndian
	le.PutUint64(slot[0:], uint64(e))
	le.PutUint64(slot[8:], uint64(b.Index))
	le.PutUint64(slot[16:], uint64(b.Valid))
	le.PutUint64(slot[24:], uint64(len(b.Items)))
	le.PutUint64(slot[32:], uint64(b.Repeats))
	labels := slot[h.LabelsOffset:]
	r := append(s.ready[:0], make([]byte, readyFixed)...)
	le.PutUint32(r[0:], uint32(i))
	le.PutUint64(r[4:], uint64(e))
	le.PutUint64(r[12:], uint64(b.Index))
	le.PutUint32(r[20:], uint32(b.Valid))
	le.PutUint32(r[24:], uint32(len(b.Items)))
	le.PutUint32(r[28:], uint32(b.Repeats))
	if p, ok := s.src.(positioner); ok {
		s.consumed = max(s.consumed, p.Consumed(b))
	}
	le.PutUint64(r[32:], uint64(s.consumed))
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
	return s.send(FrameReady, r)
}
