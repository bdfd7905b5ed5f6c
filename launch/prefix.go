package launch

import (
	"bytes"
	"io"
)

// maxLine is how much of a line prefixWriter holds before it writes the
// line's start on its own: longer lines pass in pieces.
const maxLine = 64 << 10

// prefixWriter writes each line written to it to w with prefix in front,
// a whole line per Write of w when it fits maxLine, so that the lines of
// several ranks sharing w do not mix. It never refuses data: a rank that
// writes a line of any length is never blocked by its launcher. Errors of
// w are dropped (the rank's output is lost, the rank goes on). Its Write
// is called from one goroutine at a time (exec.Cmd's copy).
type prefixWriter struct {
	w      io.Writer
	prefix []byte
	buf    []byte // the current line, prefix included, when started
	midway bool   // part of the current line was written already
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if len(p.buf) == 0 && !p.midway {
			p.buf = append(p.buf, p.prefix...)
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.buf = append(p.buf, b...)
			if len(p.buf) >= maxLine {
				p.w.Write(p.buf)
				p.buf, p.midway = p.buf[:0], true
			}
			return n, nil
		}
		p.buf = append(p.buf, b[:i+1]...)
		b = b[i+1:]
		p.w.Write(p.buf)
		p.buf, p.midway = p.buf[:0], false
	}
	return n, nil
}

// Flush writes an unterminated last line, ending it.
func (p *prefixWriter) Flush() {
	if len(p.buf) > 0 || p.midway {
		p.w.Write(append(p.buf, '\n'))
		p.buf, p.midway = p.buf[:0], false
	}
}
