package storage

import (
	"context"
	"io"
	"sync/atomic"
	"time"
)

// ReaderAt reads byte ranges of one object for indexed access: every ReadAt
// is one ranged GET (local files: one open and pread), retried from the first
// missing byte on transient errors. It is safe for concurrent use.
type ReaderAt struct {
	s       *Store
	key     string
	url     string
	size    int64
	ctx     context.Context
	retries atomic.Int64
}

var _ io.ReaderAt = (*ReaderAt)(nil)

// OpenReaderAt stats object name and returns a ReaderAt for it. ctx is the
// context of ReadAt calls (ReadAtContext takes its own).
func (s *Store) OpenReaderAt(ctx context.Context, name string) (*ReaderAt, error) {
	info, err := s.Stat(ctx, name)
	if err != nil {
		return nil, err
	}
	return &ReaderAt{s: s, key: s.prefix + name, url: s.URL(name), size: info.Size, ctx: ctx}, nil
}

// Size returns the object's size when it was opened.
func (ra *ReaderAt) Size() int64 { return ra.size }

// Retries returns how many attempts failed and were retried so far.
func (ra *ReaderAt) Retries() int64 { return ra.retries.Load() }

// ReadAt implements io.ReaderAt with the context given to OpenReaderAt.
func (ra *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	return ra.ReadAtContext(ra.ctx, p, off)
}

// ReadAtContext reads len(p) bytes from off. Like io.ReaderAt, it returns
// io.EOF with fewer bytes when the object ends first.
func (ra *ReaderAt) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, newError("read", ra.url, off, errNegativeOffset)
	}
	if err := ctx.Err(); err != nil {
		return 0, newError("read", ra.url, off, err)
	}
	if off >= ra.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := len(p)
	if left := ra.size - off; int64(want) > left {
		want = int(left)
	}
	done := 0
	rt := retrier{p: ra.s.opts.Retry}
	for done < want {
		k, err := ra.attempt(ctx, p[done:want], off+int64(done))
		done += k
		if k > 0 {
			rt.progress()
		}
		if err != nil && done < want {
			ra.retries.Add(1)
			if err = rt.wait(ctx, err); err != nil {
				return done, newError("read", ra.url, off+int64(done), err)
			}
		}
	}
	if want < len(p) {
		return want, io.EOF
	}
	return want, nil
}

// attempt is one ranged GET filling p from off, aborted when no byte comes
// for StallTimeout.
func (ra *ReaderAt) attempt(ctx context.Context, p []byte, off int64) (int, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, _, err := ra.s.be.open(actx, ra.key, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	defer body.Close()
	var src io.Reader = body
	if d := ra.s.opts.StallTimeout; d > 0 {
		t := time.AfterFunc(d, cancel)
		defer t.Stop()
		src = &progressReader{body, t, d}
	}
	n, err := io.ReadFull(src, p)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = errTruncated
	}
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		err = errStalled
	}
	return n, err
}

// progressReader pushes back a stall timer whenever bytes arrive.
type progressReader struct {
	r     io.Reader
	t     *time.Timer
	stall time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.t.Reset(p.stall)
	}
	return n, err
}
