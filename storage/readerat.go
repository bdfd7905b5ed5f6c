package storage

import (
	"context"
	"io"
	"sync/atomic"
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
	rt := ra.s.retrier()
	for done < want {
		k, err := ra.attempt(ctx, p[done:want], off+int64(done))
		done += k
		rt.progress(k)
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

// attempt is one ranged GET filling p from off, aborted when it stalls
// (Options.StallTimeout, MinRate).
func (ra *ReaderAt) attempt(ctx context.Context, p []byte, off int64) (int, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, _, err := ra.s.be.open(actx, ra.key, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	defer body.Close()
	wd := ra.s.watchdog(int64(len(p)), cancel)
	defer wd.stop()
	n, err := io.ReadFull(&countingReader{body, wd}, p)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = errTruncated
	}
	if err != nil && ctx.Err() == nil && wd.stalled() {
		err = errStalled
	}
	return n, err
}

// countingReader counts the bytes read for a watchdog.
type countingReader struct {
	r  io.Reader
	wd *watchdog
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.wd.add(n)
	return n, err
}
