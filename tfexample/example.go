// Package tfexample encodes and decodes tf.train.Example protocol buffers
// (tensorflow/core/example/example.proto and feature.proto) directly on
// protowire, without generated code.
//
// Wire layout (field numbers must not change):
//
//	Example   { Features features = 1; }
//	Features  { map<string, Feature> feature = 1; }   // entries: key = 1, value = 2
//	Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
//	BytesList { repeated bytes value = 1; }
//	FloatList { repeated float value = 1 [packed = true]; }
//	Int64List { repeated int64 value = 1 [packed = true]; }
//
// Encoding is deterministic: features in sorted key order, numeric lists
// packed. Decoding accepts packed and unpacked lists, unknown fields
// (skipped) and repeated map keys (the last wins), as protobuf does.
// Decoded byte values alias the input buffer.
package tfexample

import (
	"fmt"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// Kind is the type of a Feature's list.
type Kind uint8

// The feature kinds, numbered as Feature's oneof fields.
const (
	KindNone  Kind = 0
	KindBytes Kind = 1
	KindFloat Kind = 2
	KindInt64 Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindBytes:
		return "bytes"
	case KindFloat:
		return "float"
	case KindInt64:
		return "int64"
	}
	return "none"
}

// Feature is one named list of values; only the list matching Kind is used.
type Feature struct {
	Kind  Kind
	Bytes [][]byte
	Float []float32
	Int64 []int64
}

// Len returns the number of values in the feature's list.
func (f Feature) Len() int {
	switch f.Kind {
	case KindBytes:
		return len(f.Bytes)
	case KindFloat:
		return len(f.Float)
	case KindInt64:
		return len(f.Int64)
	}
	return 0
}

// Example is a tf.train.Example: a map from feature name to Feature.
type Example struct {
	Features map[string]Feature
}

// New returns an empty Example.
func New() *Example { return &Example{Features: map[string]Feature{}} }

// SetBytes sets a bytes feature.
func (e *Example) SetBytes(key string, v ...[]byte) *Example {
	e.Features[key] = Feature{Kind: KindBytes, Bytes: v}
	return e
}

// SetString sets a bytes feature holding one string.
func (e *Example) SetString(key, v string) *Example { return e.SetBytes(key, []byte(v)) }

// SetInt64 sets an int64 feature.
func (e *Example) SetInt64(key string, v ...int64) *Example {
	e.Features[key] = Feature{Kind: KindInt64, Int64: v}
	return e
}

// SetFloat sets a float feature.
func (e *Example) SetFloat(key string, v ...float32) *Example {
	e.Features[key] = Feature{Kind: KindFloat, Float: v}
	return e
}

// Bytes returns the first value of a bytes feature.
func (e *Example) Bytes(key string) ([]byte, bool) {
	f, ok := e.Features[key]
	if !ok || f.Kind != KindBytes || len(f.Bytes) == 0 {
		return nil, false
	}
	return f.Bytes[0], true
}

// Int64 returns the first value of an int64 feature.
func (e *Example) Int64(key string) (int64, bool) {
	f, ok := e.Features[key]
	if !ok || f.Kind != KindInt64 || len(f.Int64) == 0 {
		return 0, false
	}
	return f.Int64[0], true
}

// Keys returns the feature names in sorted order.
func (e *Example) Keys() []string {
	keys := make([]string, 0, len(e.Features))
	for k := range e.Features {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Marshal appends the wire encoding of e to dst.
func (e *Example) Marshal(dst []byte) []byte {
	var features []byte
	for _, k := range e.Keys() {
		fb := appendFeature(nil, e.Features[k])
		entry := protowire.AppendTag(nil, 1, protowire.BytesType)
		entry = protowire.AppendString(entry, k)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, fb)
		features = protowire.AppendTag(features, 1, protowire.BytesType)
		features = protowire.AppendBytes(features, entry)
	}
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	return protowire.AppendBytes(dst, features)
}

func appendFeature(dst []byte, f Feature) []byte {
	var list []byte
	switch f.Kind {
	case KindBytes:
		for _, b := range f.Bytes {
			list = protowire.AppendTag(list, 1, protowire.BytesType)
			list = protowire.AppendBytes(list, b)
		}
	case KindFloat:
		if len(f.Float) > 0 {
			packed := make([]byte, 0, 4*len(f.Float))
			for _, v := range f.Float {
				packed = protowire.AppendFixed32(packed, math.Float32bits(v))
			}
			list = protowire.AppendTag(list, 1, protowire.BytesType)
			list = protowire.AppendBytes(list, packed)
		}
	case KindInt64:
		if len(f.Int64) > 0 {
			var packed []byte
			for _, v := range f.Int64 {
				packed = protowire.AppendVarint(packed, uint64(v))
			}
			list = protowire.AppendTag(list, 1, protowire.BytesType)
			list = protowire.AppendBytes(list, packed)
		}
	default:
		return dst
	}
	dst = protowire.AppendTag(dst, protowire.Number(f.Kind), protowire.BytesType)
	return protowire.AppendBytes(dst, list)
}

// ErrMalformed reports bytes that are not a valid tf.train.Example.
var ErrMalformed error = &kindError{"tfexample: malformed Example"}

// kindError is a sentinel marking a kind of damage: its DamageKind method
// lets source.IsDamage recognise it without this package importing any.
type kindError struct{ s string }

func (e *kindError) Error() string { return e.s }
func (e *kindError) DamageKind()   {}

func malformed(what string, n int) error {
	if n < 0 {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, what, protowire.ParseError(n))
	}
	return fmt.Errorf("%w: %s", ErrMalformed, what)
}

// Unmarshal decodes a tf.train.Example. Byte values alias b.
func Unmarshal(b []byte) (*Example, error) {
	e := New()
	err := walk(b, "Example", func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		return walk(v, "Features", func(num protowire.Number, typ protowire.Type, entry []byte) error {
			if num != 1 || typ != protowire.BytesType {
				return nil
			}
			var key string
			var feat Feature
			err := walk(entry, "feature map entry", func(num protowire.Number, typ protowire.Type, v []byte) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					key = string(v)
				case num == 2 && typ == protowire.BytesType:
					f, err := parseFeature(v)
					if err != nil {
						return err
					}
					feat = f
				}
				return nil
			})
			if err != nil {
				return err
			}
			e.Features[key] = feat
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// walk calls fn for each field of a message; fn gets the payload of
// length-delimited fields and nil for others.
func walk(b []byte, what string, fn func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return malformed(what+" tag", n)
		}
		b = b[n:]
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return malformed(what+" field", n)
			}
			if err := fn(num, typ, v); err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return malformed(what+" field", n)
		}
		if err := fn(num, typ, nil); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func parseFeature(b []byte) (Feature, error) {
	var f Feature
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return f, malformed("Feature tag", n)
		}
		b = b[n:]
		if typ != protowire.BytesType || num < 1 || num > 3 {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return f, malformed("Feature field", n)
			}
			b = b[n:]
			continue
		}
		list, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return f, malformed("Feature list", n)
		}
		b = b[n:]
		// A later oneof member replaces an earlier one, as in protobuf.
		f = Feature{Kind: Kind(num)}
		if err := parseList(&f, list); err != nil {
			return f, err
		}
	}
	return f, nil
}

func parseList(f *Feature, b []byte) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return malformed(f.Kind.String()+" list tag", n)
		}
		b = b[n:]
		if num != 1 {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return malformed(f.Kind.String()+" list field", n)
			}
			b = b[n:]
			continue
		}
		switch {
		case f.Kind == KindBytes && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return malformed("bytes value", n)
			}
			f.Bytes = append(f.Bytes, v)
			b = b[n:]
		case f.Kind == KindFloat && typ == protowire.BytesType: // packed
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || len(v)%4 != 0 {
				return malformed("packed float list", min(n, 0))
			}
			for i := 0; i < len(v); i += 4 {
				bits, _ := protowire.ConsumeFixed32(v[i:])
				f.Float = append(f.Float, math.Float32frombits(bits))
			}
			b = b[n:]
		case f.Kind == KindFloat && typ == protowire.Fixed32Type:
			bits, n := protowire.ConsumeFixed32(b)
			if n < 0 {
				return malformed("float value", n)
			}
			f.Float = append(f.Float, math.Float32frombits(bits))
			b = b[n:]
		case f.Kind == KindInt64 && typ == protowire.BytesType: // packed
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return malformed("packed int64 list", n)
			}
			for len(v) > 0 {
				x, k := protowire.ConsumeVarint(v)
				if k < 0 {
					return malformed("packed int64 value", k)
				}
				f.Int64 = append(f.Int64, int64(x))
				v = v[k:]
			}
			b = b[n:]
		case f.Kind == KindInt64 && typ == protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return malformed("int64 value", n)
			}
			f.Int64 = append(f.Int64, int64(x))
			b = b[n:]
		default:
			return malformed(fmt.Sprintf("%s list has a value of wire type %d", f.Kind, typ), 0)
		}
	}
	return nil
}
