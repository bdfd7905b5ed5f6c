package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// attempt is the context of one request and its cancel function.
type attempt struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// chunk is one buffer of a Reader's ring.
type chunk struct {
	buf []byte
	n   int
}

// Reader reads one object front to back with read-ahead: one goroutine fills
// a fixed ring of ReadAheadBuffers buffers of BufferSize bytes from a single
// ranged GET while the caller consumes them. A transient failure (connection
// refused or reset, 5xx, timeout, stall, body cut short) closes the body and,
// after backoff, asks for a new range starting at the exact byte where the
// old one broke, so no byte is lost or served twice. After the first error
// every call returns it. A Reader is not safe for concurrent use; Close
// joins the goroutine.
type Reader struct {
	s    *Store
	name string
	url  string
	off  int64 // offset of the next byte Read returns
	end  int64 // offset just past the last byte

	chunks []chunk
	free   chan *chunk // empty buffers, to the filler
	full   chan *chunk // filled buffers, to the reader; closed at the end
	cur    *chunk
	pos    int

	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	ferr    error // the filler's final error; read after full is closed
	err     error // sticky
	closed  bool
	retries atomic.Int64
}

var (
	_ io.ReadCloser = (*Reader)(nil)
	_ io.WriterTo   = (*Reader)(nil)
)

// NewReader opens object name for a sequential read of all of it.
func (s *Store) NewReader(ctx context.Context, name string) (*Reader, error) {
	return s.NewRangeReader(ctx, name, 0, -1)
}

// NewRangeReader opens object name for a sequential read of n bytes from
// off; n < 0 reads to the end. The first request is made before it returns,
// so a missing object fails here. ctx bounds the whole read: cancelling it
// ends the Reader with ctx's error.
func (s *Store) NewRangeReader(ctx context.Context, name string, off, n int64) (*Reader, error) {
	url := s.URL(name)
	if off < 0 {
		return nil, newError("open", url, off, errNegativeOffset)
	}
	if err := ctx.Err(); err != nil {
		return nil, newError("open", url, off, err)
	}
	key := s.prefix + name
	rctx, cancel := context.WithCancel(ctx)
	r := &Reader{s: s, name: name, url: url, off: off, ctx: rctx, cancel: cancel, done: make(chan struct{})}

	var body io.ReadCloser
	var info ObjectInfo
	if n == 0 || off > 0 {
		// A range starting at the end would be refused: learn the size first.
		st, err := s.Stat(ctx, name)
		if err != nil {
			cancel()
			return nil, newError("open", url, off, errors.Unwrap(err))
		}
		if off > st.Size {
			cancel()
			return nil, newError("open", url, off, fmt.Errorf("offset beyond the object's %d bytes", st.Size))
		}
		info = st
	}
	a := attempt{rctx, func() {}}
	if info.Name == "" || off < info.Size && n != 0 {
		rt := s.retrier()
		for {
			a.ctx, a.cancel = context.WithCancel(rctx)
			b, bi, err := s.be.open(a.ctx, key, off, n)
			if err == nil {
				body, info = b, bi
				break
			}
			a.cancel()
			r.retries.Add(1)
			if err = rt.wait(ctx, err); err != nil {
				cancel()
				return nil, newError("open", url, off, err)
			}
		}
	}
	r.end = info.Size
	if n >= 0 && off+n < r.end {
		r.end = off + n
	}

	nb := s.opts.ReadAheadBuffers
	r.chunks = make([]chunk, nb)
	r.free = make(chan *chunk, nb)
	r.full = make(chan *chunk, nb)
	for i := range r.chunks {
		r.chunks[i].buf = s.buffer()
		r.free <- &r.chunks[i]
	}
	go r.fill(rctx, key, info, body, a)
	return r, nil
}

// fill is the read-ahead goroutine: it owns body and the chunk it holds.
//
// body, when not nil, is the first response, opened on a; each later
// response gets its own attempt so that the stall timer can abort it.
func (r *Reader) fill(ctx context.Context, key string, info ObjectInfo, body io.ReadCloser, a attempt) {
	defer close(r.done)
	defer close(r.full)
	off := r.off
	var (
		wd *watchdog // the stall check of the attempt reading body
		rt = r.s.retrier()
	)
	closeBody := func() {
		if body != nil {
			body.Close()
			body = nil
		}
		wd.stop()
		wd = nil
		a.cancel()
	}
	defer closeBody()
	// fail ends the read with err at offset off.
	fail := func(err error) {
		r.ferr = newError("read", r.url, off, err)
	}
	for off < r.end {
		var c *chunk
		wd.pause() // waiting for the caller is not a stall of the server
		select {
		case c = <-r.free:
		case <-ctx.Done():
			fail(ctx.Err())
			return
		}
		wd.resume()
		c.n = 0
		for c.n < len(c.buf) && off < r.end {
			if body == nil {
				a.ctx, a.cancel = context.WithCancel(ctx)
				b, bi, err := r.s.be.open(a.ctx, key, off, r.end-off)
				if err == nil && (bi.Size != info.Size || !bi.ModTime.Equal(info.ModTime)) {
					b.Close()
					err = fmt.Errorf("%w: was %d bytes modified %v, now %d bytes modified %v",
						ErrChanged, info.Size, info.ModTime, bi.Size, bi.ModTime)
				}
				if err != nil {
					a.cancel()
					r.retries.Add(1)
					if err = rt.wait(ctx, err); err != nil {
						r.deliver(ctx, c)
						fail(err)
						return
					}
					continue
				}
				body = b
			}
			want := int64(len(c.buf) - c.n)
			if left := r.end - off; left < want {
				want = left
			}
			if wd == nil { // the body's first read: its stall checks begin
				wd = r.s.watchdog(r.end-off, a.cancel)
			}
			k, err := body.Read(c.buf[c.n : c.n+int(want)])
			c.n += k
			off += int64(k)
			wd.add(k)
			rt.progress(k)
			if err == io.EOF && off < r.end {
				err = errTruncated
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				if ctx.Err() == nil && wd.stalled() {
					err = errStalled
				}
				closeBody()
				r.retries.Add(1)
				if err = rt.wait(ctx, err); err != nil {
					r.deliver(ctx, c)
					fail(err)
					return
				}
			}
		}
		if !r.deliver(ctx, c) {
			fail(ctx.Err())
			return
		}
	}
	r.ferr = io.EOF
}

// deliver hands c to the reader unless it is empty or ctx ended.
func (r *Reader) deliver(ctx context.Context, c *chunk) bool {
	if c.n == 0 {
		r.free <- c // cannot block: the ring has room for every chunk
		return true
	}
	select {
	case r.full <- c:
		return true
	case <-ctx.Done():
		return false
	}
}

// next makes r.cur a chunk with unread bytes, or sets r.err.
func (r *Reader) next() bool {
	if r.err != nil {
		return false
	}
	if err := r.ctx.Err(); err != nil {
		// Filled buffers may still wait; a cancelled read stops now.
		r.err = newError("read", r.url, r.off, err)
		return false
	}
	for r.cur == nil || r.pos >= r.cur.n {
		if r.cur != nil {
			r.free <- r.cur
			r.cur = nil
		}
		c, ok := <-r.full
		if !ok {
			r.err = r.ferr
			if r.err == nil {
				r.err = newError("read", r.url, r.off, errors.New("reader closed"))
			}
			return false
		}
		r.cur, r.pos = c, 0
	}
	return true
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, r.err
	}
	if !r.next() {
		return 0, r.err
	}
	n := copy(p, r.cur.buf[r.pos:r.cur.n])
	r.pos += n
	r.off += int64(n)
	return n, nil
}

// WriteTo implements io.WriterTo, writing the ring's buffers to w without a
// copy in between.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for r.next() {
		n, err := w.Write(r.cur.buf[r.pos:r.cur.n])
		r.pos += n
		r.off += int64(n)
		total += int64(n)
		if err != nil {
			r.err = err
			return total, err
		}
	}
	if r.err == io.EOF {
		return total, nil
	}
	return total, r.err
}

// Offset returns the object offset of the next byte Read returns.
func (r *Reader) Offset() int64 { return r.off }

// Size returns the number of bytes the Reader serves in all: the range's
// length, or the object's size from the starting offset.
func (r *Reader) Size() int64 { return r.end }

// Retries returns how many attempts failed and were retried so far.
func (r *Reader) Retries() int64 { return r.retries.Load() }

// Close stops the read-ahead goroutine, waits for it, and returns the ring's
// buffers to the Store. It returns nil; a second Close does nothing.
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.cancel()
	<-r.done
	for i := range r.chunks {
		r.s.release(r.chunks[i].buf)
		r.chunks[i].buf = nil
	}
	r.cur = nil
	if r.err == nil || r.err == io.EOF {
		r.err = newError("read", r.url, r.off, errors.New("reader closed"))
	}
	return nil
}
