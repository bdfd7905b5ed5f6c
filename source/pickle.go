package source

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// CIFAR's python batches are Python pickles (protocol 2, written by
// Python 2's cPickle) of one dict each: str keys, a numpy uint8 array of
// N×3072 pixels, lists of ints and of str. readPickle reads exactly that
// subset of pickle — the opcodes those files use, and those Python 3's
// pickle writes for the same dict (protocols 2 to 4: BINUNICODE, bytes as
// _codecs.encode(str, "latin1"), FRAME, MEMOIZE, STACK_GLOBAL) — and
// calls no code: the only globals it knows are numpy's array and dtype
// reconstructors and _codecs.encode, each checked for the arguments a
// uint8 array takes. Anything else is an error naming the opcode and its
// offset. It is no general unpickler.

// A value of the subset: nil (None), bool, int64, pyStr (str: text),
// pyBytes (Python 2 str and bytes, as torchvision reads them with
// encoding="latin1": each byte a character), *pyList, pyTuple, *pyDict,
// pyGlobal, *pyArray, *pyDtype.
type (
	pyStr    string
	pyBytes  []byte // aliases the file's bytes
	pyTuple  []any
	pyGlobal string // "module name"
	pyList   struct{ items []any }
	pyDict   struct {
		keys []string
		m    map[string]any
	}
	// pyArray is a numpy uint8 array (numpy.core.multiarray._reconstruct,
	// then its state): C-order bytes of shape.
	pyArray struct {
		shape []int
		data  []byte
		built bool
	}
	pyDtype struct{ str string }
)

// pyText returns v as text (str, or a Python 2 str as latin-1) and
// whether it is one (a str of invalid UTF-8 is none: Python refuses it).
func pyText(v any) (string, bool) {
	switch s := v.(type) {
	case pyStr:
		return string(s), utf8.ValidString(string(s))
	case pyBytes:
		return latin1(string(s)), true
	}
	return "", false
}

// latin1 decodes bytes as latin-1.
func latin1(b string) string {
	for i := 0; i < len(b); i++ {
		if b[i] >= 0x80 {
			var sb strings.Builder
			for j := 0; j < len(b); j++ {
				sb.WriteRune(rune(b[j]))
			}
			return sb.String()
		}
	}
	return b
}

// maxPickleMemo bounds the memo (each entry is one opcode's value, so a
// file's size bounds it too).
const maxPickleMemo = 1 << 24

// readPickle reads one pickled value from data (name in errors). Strings
// and the array's bytes alias data.
func readPickle(data []byte, name string) (any, error) {
	p := &pickleReader{data: data, name: name, memo: map[uint32]any{}}
	return p.run()
}

type pickleReader struct {
	data  []byte
	name  string
	pos   int // offset of the next byte
	op    int // offset of the opcode being run
	stack []any
	marks []int
	memo  map[uint32]any
}

// pyMark is the stack's mark (MARK): the values above it are the next
// TUPLE's, APPENDS' or SETITEMS'.
type pyMark struct{}

func (p *pickleReader) errf(format string, a ...any) error {
	return &CorruptError{Path: p.name, Offset: int64(p.op), Reason: "CIFAR pickle: " + fmt.Sprintf(format, a...)}
}

func (p *pickleReader) take(n int) ([]byte, error) {
	if n < 0 || n > len(p.data)-p.pos {
		return nil, p.errf("%d bytes announced, %d left", n, len(p.data)-p.pos)
	}
	b := p.data[p.pos : p.pos+n]
	p.pos += n
	return b, nil
}

func (p *pickleReader) u8() (int, error) {
	b, err := p.take(1)
	if err != nil {
		return 0, err
	}
	return int(b[0]), nil
}

func (p *pickleReader) u32() (uint32, error) {
	b, err := p.take(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (p *pickleReader) push(v any) { p.stack = append(p.stack, v) }

func (p *pickleReader) pop() (any, error) {
	if len(p.stack) == 0 || (len(p.marks) > 0 && len(p.stack) <= p.marks[len(p.marks)-1]) {
		return nil, p.errf("stack underflow")
	}
	v := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	return v, nil
}

func (p *pickleReader) top() (any, error) {
	if len(p.stack) == 0 || (len(p.marks) > 0 && len(p.stack) <= p.marks[len(p.marks)-1]) {
		return nil, p.errf("stack underflow")
	}
	return p.stack[len(p.stack)-1], nil
}

// popMark pops the values above the last mark, and the mark.
func (p *pickleReader) popMark() ([]any, error) {
	if len(p.marks) == 0 {
		return nil, p.errf("no MARK")
	}
	m := p.marks[len(p.marks)-1]
	p.marks = p.marks[:len(p.marks)-1]
	vs := append([]any(nil), p.stack[m:]...)
	p.stack = p.stack[:m]
	return vs, nil
}

func (p *pickleReader) put(i uint32) error {
	v, err := p.top()
	if err != nil {
		return err
	}
	if len(p.memo) >= maxPickleMemo {
		return p.errf("more than %d memo entries", maxPickleMemo)
	}
	p.memo[i] = v
	return nil
}

func (p *pickleReader) get(i uint32) error {
	v, ok := p.memo[i]
	if !ok {
		return p.errf("memo entry %d not set", i)
	}
	p.push(v)
	return nil
}

func (p *pickleReader) run() (any, error) {
	for {
		p.op = p.pos
		c, err := p.u8()
		if err != nil {
			return nil, p.errf("no STOP: the data ends")
		}
		switch c {
		case 0x80: // PROTO
			v, err := p.u8()
			if err != nil {
				return nil, err
			}
			if v < 2 || v > 4 {
				return nil, p.errf("protocol %d (CIFAR's batches are protocol 2; 2 to 4 are read)", v)
			}
		case 0x95: // FRAME: a length, then opcodes
			if _, err := p.take(8); err != nil {
				return nil, err
			}
		case '.': // STOP
			v, err := p.pop()
			if err != nil {
				return nil, err
			}
			return v, nil
		case '(': // MARK
			p.marks = append(p.marks, len(p.stack))
		case '}':
			p.push(&pyDict{m: map[string]any{}})
		case ']':
			p.push(&pyList{})
		case ')':
			p.push(pyTuple{})
		case 0x85, 0x86, 0x87: // TUPLE1..3
			n := int(c - 0x84)
			if len(p.stack) < n || (len(p.marks) > 0 && len(p.stack)-n < p.marks[len(p.marks)-1]) {
				return nil, p.errf("stack underflow")
			}
			t := append(pyTuple(nil), p.stack[len(p.stack)-n:]...)
			p.stack = p.stack[:len(p.stack)-n]
			p.push(t)
		case 't': // TUPLE
			vs, err := p.popMark()
			if err != nil {
				return nil, err
			}
			p.push(pyTuple(vs))
		case 'q': // BINPUT
			i, err := p.u8()
			if err != nil {
				return nil, err
			}
			if err := p.put(uint32(i)); err != nil {
				return nil, err
			}
		case 'r': // LONG_BINPUT
			i, err := p.u32()
			if err != nil {
				return nil, err
			}
			if err := p.put(i); err != nil {
				return nil, err
			}
		case 0x94: // MEMOIZE
			if err := p.put(uint32(len(p.memo))); err != nil {
				return nil, err
			}
		case 'h': // BINGET
			i, err := p.u8()
			if err != nil {
				return nil, err
			}
			if err := p.get(uint32(i)); err != nil {
				return nil, err
			}
		case 'j': // LONG_BINGET
			i, err := p.u32()
			if err != nil {
				return nil, err
			}
			if err := p.get(i); err != nil {
				return nil, err
			}
		case 'K': // BININT1
			v, err := p.u8()
			if err != nil {
				return nil, err
			}
			p.push(int64(v))
		case 'M': // BININT2
			b, err := p.take(2)
			if err != nil {
				return nil, err
			}
			p.push(int64(binary.LittleEndian.Uint16(b)))
		case 'J': // BININT
			v, err := p.u32()
			if err != nil {
				return nil, err
			}
			p.push(int64(int32(v)))
		case 'N':
			p.push(nil)
		case 0x88:
			p.push(true)
		case 0x89:
			p.push(false)
		case 'U', 'T', 'C', 'B', 'X', 0x8c: // strings and bytes
			n := 0
			if c == 'U' || c == 'C' || c == 0x8c {
				n, err = p.u8()
			} else {
				var v uint32
				v, err = p.u32()
				n = int(int32(v)) // BINSTRING's length is signed
			}
			if err != nil {
				return nil, err
			}
			b, err := p.take(n)
			if err != nil {
				return nil, err
			}
			if c == 'X' || c == 0x8c {
				p.push(pyStr(b)) // checked as UTF-8 where read as text (pyText)
			} else {
				p.push(pyBytes(b))
			}
		case 'c': // GLOBAL: module\nname\n
			mod, err := p.line()
			if err != nil {
				return nil, err
			}
			name, err := p.line()
			if err != nil {
				return nil, err
			}
			p.push(pyGlobal(mod + " " + name))
		case 0x93: // STACK_GLOBAL
			name, err := p.pop()
			if err != nil {
				return nil, err
			}
			mod, err := p.pop()
			if err != nil {
				return nil, err
			}
			m, ok1 := mod.(pyStr)
			n, ok2 := name.(pyStr)
			if !ok1 || !ok2 {
				return nil, p.errf("STACK_GLOBAL of no names")
			}
			p.push(pyGlobal(string(m) + " " + string(n)))
		case 'R': // REDUCE
			args, err := p.pop()
			if err != nil {
				return nil, err
			}
			fn, err := p.pop()
			if err != nil {
				return nil, err
			}
			v, err := p.reduce(fn, args)
			if err != nil {
				return nil, err
			}
			p.push(v)
		case 'b': // BUILD
			state, err := p.pop()
			if err != nil {
				return nil, err
			}
			obj, err := p.top()
			if err != nil {
				return nil, err
			}
			if err := p.build(obj, state); err != nil {
				return nil, err
			}
		case 'a', 'e': // APPEND, APPENDS
			var vs []any
			if c == 'a' {
				v, err := p.pop()
				if err != nil {
					return nil, err
				}
				vs = []any{v}
			} else if vs, err = p.popMark(); err != nil {
				return nil, err
			}
			l, err := p.top()
			if err != nil {
				return nil, err
			}
			list, ok := l.(*pyList)
			if !ok {
				return nil, p.errf("APPEND to a %s", pyKind(l))
			}
			list.items = append(list.items, vs...)
		case 's', 'u': // SETITEM, SETITEMS
			var vs []any
			if c == 's' {
				v, err := p.pop()
				if err != nil {
					return nil, err
				}
				k, err := p.pop()
				if err != nil {
					return nil, err
				}
				vs = []any{k, v}
			} else if vs, err = p.popMark(); err != nil {
				return nil, err
			}
			if len(vs)%2 != 0 {
				return nil, p.errf("SETITEMS of an odd count")
			}
			d, err := p.top()
			if err != nil {
				return nil, err
			}
			dict, ok := d.(*pyDict)
			if !ok {
				return nil, p.errf("SETITEM on a %s", pyKind(d))
			}
			for i := 0; i < len(vs); i += 2 {
				k, ok := pyText(vs[i])
				if !ok {
					return nil, p.errf("a dict key of type %s (CIFAR's are str)", pyKind(vs[i]))
				}
				if _, dup := dict.m[k]; !dup {
					dict.keys = append(dict.keys, k)
				}
				dict.m[k] = vs[i+1]
			}
		default:
			return nil, p.errf("opcode %#02x: not one of the pickle subset CIFAR's batches use", c)
		}
	}
}

// line reads a GLOBAL's text line (at most 256 bytes).
func (p *pickleReader) line() (string, error) {
	for i := p.pos; i < len(p.data) && i < p.pos+256; i++ {
		if p.data[i] == '\n' {
			s := string(p.data[p.pos:i])
			p.pos = i + 1
			return s, nil
		}
	}
	return "", p.errf("GLOBAL's name not ended by a newline")
}

func pyKind(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64:
		return "int"
	case pyStr:
		return "str"
	case pyBytes:
		return "bytes"
	case *pyList:
		return "list"
	case pyTuple:
		return "tuple"
	case *pyDict:
		return "dict"
	case pyGlobal:
		return "global"
	case *pyArray:
		return "numpy array"
	case *pyDtype:
		return "numpy dtype"
	}
	return fmt.Sprintf("%T", v)
}

// reduce applies one of the three callables the subset knows.
func (p *pickleReader) reduce(fn, args any) (any, error) {
	g, ok := fn.(pyGlobal)
	if !ok {
		return nil, p.errf("REDUCE of a %s", pyKind(fn))
	}
	a, ok := args.(pyTuple)
	if !ok {
		return nil, p.errf("REDUCE of %s with %s arguments", g, pyKind(args))
	}
	switch g {
	case "numpy.core.multiarray _reconstruct", "numpy._core.multiarray _reconstruct":
		// _reconstruct(numpy.ndarray, (0,), b'b'): an empty array, its
		// state set by BUILD.
		if len(a) != 3 || a[0] != pyGlobal("numpy ndarray") {
			return nil, p.errf("_reconstruct of other than numpy.ndarray")
		}
		return &pyArray{}, nil
	case "numpy dtype":
		// dtype('u1', False, True): CIFAR's pixels are unsigned bytes.
		if len(a) < 1 {
			return nil, p.errf("numpy.dtype without arguments")
		}
		s, _ := pyText(a[0])
		if s != "u1" && s != "|u1" && s != "B" {
			return nil, p.errf("numpy dtype %q (CIFAR's pixels are uint8, u1)", s)
		}
		return &pyDtype{str: s}, nil
	case "_codecs encode":
		// _codecs.encode(str, "latin1"): Python 3's protocol 2 form of
		// bytes, each character one byte.
		if len(a) != 2 {
			return nil, p.errf("_codecs.encode of %d arguments", len(a))
		}
		s, ok1 := a[0].(pyStr)
		enc, ok2 := a[1].(pyStr)
		if !ok1 || !ok2 || (enc != "latin1" && enc != "latin-1") {
			return nil, p.errf("_codecs.encode other than of a str to latin1")
		}
		// In UTF-8 a latin-1 character is one byte below 0x80, or C2 or
		// C3 and a continuation byte; anything else is refused.
		b := make([]byte, len(s))
		n := 0
		for i := 0; i < len(s); n++ {
			switch c := s[i]; {
			case c < 0x80:
				b[n] = c
				i++
			case (c == 0xc2 || c == 0xc3) && i+1 < len(s) && s[i+1]&0xc0 == 0x80:
				b[n] = (c&3)<<6 | s[i+1]&0x3f
				i += 2
			default:
				return nil, p.errf("_codecs.encode: %q at %d is not a latin-1 character in UTF-8", shorten(string(s[i:min(i+4, len(s))])), i)
			}
		}
		return pyBytes(b[:n]), nil
	}
	return nil, p.errf("global %s: not one CIFAR's batches use (numpy's array and dtype, _codecs.encode)", strings.ReplaceAll(string(g), " ", "."))
}

// build sets an array's state (version, shape, dtype, fortran order,
// bytes) or accepts a dtype's.
func (p *pickleReader) build(obj, state any) error {
	switch o := obj.(type) {
	case *pyDtype:
		return nil // (3, '|', None, …): a byte has no order
	case *pyArray:
		st, ok := state.(pyTuple)
		if !ok || len(st) != 5 || o.built {
			return p.errf("numpy array state: not (version, shape, dtype, fortran, data)")
		}
		shape, ok := st[1].(pyTuple)
		if !ok {
			return p.errf("numpy array shape of type %s", pyKind(st[1]))
		}
		if _, ok := st[2].(*pyDtype); !ok {
			return p.errf("numpy array of dtype %s", pyKind(st[2]))
		}
		if f, ok := st[3].(bool); !ok || f {
			if i, isInt := st[3].(int64); !isInt || i != 0 {
				return p.errf("numpy array in Fortran order")
			}
		}
		data, ok := st[4].(pyBytes)
		if !ok {
			return p.errf("numpy array data of type %s", pyKind(st[4]))
		}
		n := int64(1)
		for _, d := range shape {
			v, ok := d.(int64)
			if !ok || v < 0 || v > int64(len(data)) {
				return p.errf("numpy array shape %v", shape)
			}
			n *= v
			if n > int64(len(data)) {
				return p.errf("numpy array shape %v: more than its %d bytes", shape, len(data))
			}
			o.shape = append(o.shape, int(v))
		}
		if n != int64(len(data)) {
			return p.errf("numpy array shape %v: %d bytes, its data has %d", shape, n, len(data))
		}
		o.data, o.built = data, true
		return nil
	}
	return p.errf("BUILD of a %s", pyKind(obj))
}
