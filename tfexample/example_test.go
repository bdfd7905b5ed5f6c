package tfexample

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"testing"
)

// The wire bytes of
// Example{features{feature{key:"a" value{int64_list{value:[1,300]}}}}},
// assembled by hand from the proto definitions.
func TestGoldenEncoding(t *testing.T) {
	// Int64List{value:[1,300]} packed = 0a 03 01 ac 02 (5 bytes); build the
	// expected bytes bottom-up so each length is visibly right.
	list := []byte{0x0a, 0x03, 0x01, 0xac, 0x02}
	feature := append([]byte{0x1a, byte(len(list))}, list...)
	entry := append([]byte{0x0a, 0x01, 'a', 0x12, byte(len(feature))}, feature...)
	features := append([]byte{0x0a, byte(len(entry))}, entry...)
	want := append([]byte{0x0a, byte(len(features))}, features...)
	got := New().SetInt64("a", 1, 300).Marshal(nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal = %s, want %s", hex.EncodeToString(got), hex.EncodeToString(want))
	}
	ex, err := Unmarshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if f := ex.Features["a"]; f.Kind != KindInt64 || !reflect.DeepEqual(f.Int64, []int64{1, 300}) {
		t.Fatalf("Unmarshal = %+v", f)
	}
}

func TestRoundTrip(t *testing.T) {
	ex := New().
		SetBytes("image/encoded", []byte{0xff, 0xd8, 0}, []byte{}).
		SetString("image/format", "jpeg").
		SetInt64("image/class/label", 7).
		SetInt64("neg", -1, math.MinInt64, math.MaxInt64).
		SetFloat("f", 0.5, float32(math.Inf(-1)), -0).
		SetInt64("empty")
	back, err := Unmarshal(ex.Marshal(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ex.Keys() {
		a, b := ex.Features[k], back.Features[k]
		if a.Len() == 0 && b.Len() == 0 && (a.Kind == b.Kind) {
			continue
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: %+v != %+v", k, a, b)
		}
	}
	if got := ex.Keys(); !reflect.DeepEqual(got, back.Keys()) {
		t.Errorf("keys %v != %v", got, back.Keys())
	}
	// Deterministic: same bytes each time regardless of map order.
	if !bytes.Equal(ex.Marshal(nil), back.Marshal(nil)) {
		t.Error("Marshal is not deterministic")
	}
	if v, ok := back.Int64("image/class/label"); !ok || v != 7 {
		t.Errorf("Int64 accessor = %d, %v", v, ok)
	}
	if _, ok := back.Int64("image/format"); ok {
		t.Error("Int64 accessor accepted a bytes feature")
	}
}

// Unpacked repeated scalars (proto2 style) decode the same as packed.
func TestUnpackedLists(t *testing.T) {
	list := []byte{0x08, 0x05, 0x08, 0x07}  // value=5, value=7 as separate varints
	flist := []byte{0x0d, 0, 0, 0x80, 0x3f} // value=1.0 fixed32
	feat := func(kind byte, l []byte) []byte { return append([]byte{kind, byte(len(l))}, l...) }
	entry := func(key string, f []byte) []byte {
		e := append([]byte{0x0a, byte(len(key))}, key...)
		return append(append(e, 0x12, byte(len(f))), f...)
	}
	var features []byte
	for _, e := range [][]byte{entry("i", feat(0x1a, list)), entry("f", feat(0x12, flist))} {
		features = append(append(features, 0x0a, byte(len(e))), e...)
	}
	msg := append([]byte{0x0a, byte(len(features))}, features...)
	ex, err := Unmarshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ex.Features["i"].Int64, []int64{5, 7}) || !reflect.DeepEqual(ex.Features["f"].Float, []float32{1}) {
		t.Fatalf("got %+v", ex.Features)
	}
}

func TestMalformed(t *testing.T) {
	good := New().SetString("k", "value").Marshal(nil)
	for i := 1; i < len(good); i++ {
		if _, err := Unmarshal(good[:i]); err == nil {
			t.Errorf("truncated to %d bytes: no error", i)
		} else if !errors.Is(err, ErrMalformed) {
			t.Errorf("error %v is not ErrMalformed", err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(New().SetString("k", "v").SetInt64("l", 1, 2).SetFloat("x", 1.5).Marshal(nil))
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		first := map[string][]byte{}
		ferr := Fields(b, func(key, feat []byte) error {
			if v, ok := FirstBytes(feat); ok {
				first[string(key)] = v
			} else {
				delete(first, string(key))
			}
			FirstInt64(feat)
			return nil
		})
		ex, err := Unmarshal(b)
		// Fields checks the framing down to each feature, not inside it
		// (it is lazy), so it accepts at least what Unmarshal accepts, and
		// then agrees with it.
		if err == nil && ferr != nil {
			t.Fatalf("Fields rejects what Unmarshal accepts: %v", ferr)
		}
		if err == nil {
			for k, v := range first {
				if w, ok := ex.Bytes(k); !ok || !bytes.Equal(v, w) {
					t.Fatalf("feature %q: Fields gives %q, Unmarshal %q", k, v, w)
				}
			}
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		// Whatever decodes re-encodes into something that decodes the same.
		once := ex.Marshal(nil)
		ex2, err := Unmarshal(once)
		if err != nil {
			t.Fatalf("re-encoded example does not decode: %v", err)
		}
		if !bytes.Equal(once, ex2.Marshal(nil)) {
			t.Fatal("encoding is not stable")
		}
	})
}

// The allocation-free field scan agrees with Unmarshal.
func TestFieldsAgreeWithUnmarshal(t *testing.T) {
	ex := New().SetBytes("image/encoded", []byte{1, 2, 3}).SetInt64("image/class/label", 7, 8).
		SetString("image/filename", "a/b.jpg").SetFloat("f", 1).SetInt64("neg", -5)
	b := ex.Marshal(nil)
	got := map[string]string{}
	err := Fields(b, func(key, feat []byte) error {
		if v, ok := FirstBytes(feat); ok {
			got[string(key)] = "b:" + string(v)
		}
		if v, ok := FirstInt64(feat); ok {
			got[string(key)] = "i:" + string(rune('0'+v%10))
			if v < 0 {
				got[string(key)] = "neg"
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"image/encoded": "b:\x01\x02\x03", "image/class/label": "i:7", "image/filename": "b:a/b.jpg", "neg": "neg"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() {
		Fields(b, func(key, feat []byte) error { FirstBytes(feat); FirstInt64(feat); return nil })
	}); n != 0 {
		t.Fatalf("Fields allocates %.0f times per record", n)
	}
	for i := 1; i < len(b); i++ {
		if err := Fields(b[:i], func(_, _ []byte) error { return nil }); err == nil {
			if _, err2 := Unmarshal(b[:i]); err2 != nil {
				t.Fatalf("truncated to %d: Fields accepts what Unmarshal rejects (%v)", i, err2)
			}
		}
	}
}
