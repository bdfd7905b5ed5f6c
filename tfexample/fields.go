package tfexample

import "google.golang.org/protobuf/encoding/protowire"

// Fields calls fn with the key and the raw, still encoded Feature message
// of every feature of the serialized Example b, in wire order, without
// allocating: the fast path for readers that need a few features of each
// record (FirstBytes, FirstInt64 decode them). Both slices alias b. It
// stops at the first error fn returns.
func Fields(b []byte, fn func(key, feature []byte) error) error {
	return walk(b, "Example", func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		return walk(v, "Features", func(num protowire.Number, typ protowire.Type, entry []byte) error {
			if num != 1 || typ != protowire.BytesType {
				return nil
			}
			var key, feat []byte
			err := walk(entry, "feature map entry", func(num protowire.Number, typ protowire.Type, v []byte) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					key = v
				case num == 2 && typ == protowire.BytesType:
					feat = v
				}
				return nil
			})
			if err != nil {
				return err
			}
			return fn(key, feat)
		})
	})
}

// list returns the payload of the last list of the given kind in a raw
// Feature (a later oneof member replaces an earlier one).
func list(feature []byte, kind Kind) (l []byte, ok bool) {
	for len(feature) > 0 {
		num, typ, n := protowire.ConsumeTag(feature)
		if n < 0 {
			return nil, false
		}
		feature = feature[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, feature)
			if n < 0 {
				return nil, false
			}
			feature = feature[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(feature)
		if n < 0 {
			return nil, false
		}
		feature = feature[n:]
		switch {
		case num == protowire.Number(kind):
			l, ok = v, true
		case num >= 1 && num <= 3:
			l, ok = nil, false
		}
	}
	return l, ok
}

// FirstBytes returns the first value of a raw bytes Feature.
func FirstBytes(feature []byte) ([]byte, bool) {
	l, ok := list(feature, KindBytes)
	for ok && len(l) > 0 {
		num, typ, n := protowire.ConsumeTag(l)
		if n < 0 {
			return nil, false
		}
		l = l[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(l)
			return v, n >= 0
		}
		n = protowire.ConsumeFieldValue(num, typ, l)
		if n < 0 {
			return nil, false
		}
		l = l[n:]
	}
	return nil, false
}

// FirstInt64 returns the first value of a raw int64 Feature.
func FirstInt64(feature []byte) (int64, bool) {
	l, ok := list(feature, KindInt64)
	for ok && len(l) > 0 {
		num, typ, n := protowire.ConsumeTag(l)
		if n < 0 {
			return 0, false
		}
		l = l[n:]
		switch {
		case num == 1 && typ == protowire.BytesType: // packed
			v, n := protowire.ConsumeBytes(l)
			if n < 0 || len(v) == 0 {
				return 0, false
			}
			x, k := protowire.ConsumeVarint(v)
			return int64(x), k >= 0
		case num == 1 && typ == protowire.VarintType:
			x, k := protowire.ConsumeVarint(l)
			return int64(x), k >= 0
		}
		n = protowire.ConsumeFieldValue(num, typ, l)
		if n < 0 {
			return 0, false
		}
		l = l[n:]
	}
	return 0, false
}
