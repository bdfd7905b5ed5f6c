package source

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"slices"

	"github.com/faster-training/faster/imgcodec/rawpix"
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of Caffe's Datum message (caffe.proto). They are part of
// the format and must not change.
const (
	datumChannels  = 1
	datumHeight    = 2
	datumWidth     = 3
	datumData      = 4
	datumLabel     = 5
	datumFloatData = 6
	datumEncoded   = 7
)

// ErrBadDatum marks bytes that are not a usable Caffe Datum.
var ErrBadDatum = errors.New("bad Caffe Datum")

// maxDatumPixels bounds channels*height*width of a raw Datum.
const maxDatumPixels = 1 << 28

// Datum is Caffe's Datum message: either an encoded image (Encoded, Data
// holds the file bytes) or raw pixels, planar (channel-major) uint8 in
// BGR order for 3 channels, as Caffe's convert_imageset writes them.
type Datum struct {
	Channels, Height, Width int
	Data                    []byte // aliases the decoded buffer
	Label                   int
	FloatData               []float32
	Encoded                 bool
}

// DecodeDatum parses a serialized Datum. Data aliases b. Unknown fields
// are skipped, as protobuf requires.
func DecodeDatum(b []byte) (Datum, error) {
	d, _, err := decodeDatum(b)
	return d, err
}

// decodeDatum is DecodeDatum, also saying whether the label field was
// present (proto2 keeps the difference between label 0 and no label).
func decodeDatum(b []byte) (d Datum, hasLabel bool, _ error) {
	bad := func(format string, a ...any) (Datum, bool, error) {
		return Datum{}, false, fmt.Errorf("%w: %s", ErrBadDatum, fmt.Sprintf(format, a...))
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return bad("tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == datumData && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return bad("data: %v", protowire.ParseError(n))
			}
			d.Data, b = v, b[n:]
		case num == datumFloatData && typ == protowire.BytesType: // packed
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || len(v)%4 != 0 {
				return bad("float_data: bad packed field")
			}
			for i := 0; i < len(v); i += 4 {
				d.FloatData = append(d.FloatData, math.Float32frombits(uint32(v[i])|uint32(v[i+1])<<8|uint32(v[i+2])<<16|uint32(v[i+3])<<24))
			}
			b = b[n:]
		case num == datumFloatData && typ == protowire.Fixed32Type:
			v, n := protowire.ConsumeFixed32(b)
			if n < 0 {
				return bad("float_data: %v", protowire.ParseError(n))
			}
			d.FloatData, b = append(d.FloatData, math.Float32frombits(v)), b[n:]
		case num >= datumChannels && num <= datumLabel || num == datumEncoded:
			if typ != protowire.VarintType {
				return bad("field %d: wire type %d, want varint", num, typ)
			}
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return bad("field %d: %v", num, protowire.ParseError(n))
			}
			b = b[n:]
			// int32 fields: negative values are sign-extended to 64 bits.
			x := int64(int32(v))
			switch num {
			case datumChannels:
				d.Channels = int(x)
			case datumHeight:
				d.Height = int(x)
			case datumWidth:
				d.Width = int(x)
			case datumLabel:
				d.Label, hasLabel = int(x), true
			case datumEncoded:
				d.Encoded = v != 0
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return bad("field %d: %v", num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	if d.Channels < 0 || d.Height < 0 || d.Width < 0 {
		return bad("negative shape %dx%dx%d", d.Channels, d.Height, d.Width)
	}
	return d, hasLabel, nil
}

// DatumLabel returns the label of a serialized Datum without checking the
// rest of it more than the framing needs.
func DatumLabel(b []byte) (int, error) {
	d, err := DecodeDatum(b)
	return d.Label, err
}

// Marshal appends the Datum's wire form to dst, fields in number order as
// Caffe writes them (zero-valued scalars omitted, as proto2 writers with
// unset fields do).
func (d *Datum) Marshal(dst []byte) []byte {
	for _, f := range []struct {
		num int
		v   int
	}{{datumChannels, d.Channels}, {datumHeight, d.Height}, {datumWidth, d.Width}} {
		if f.v != 0 {
			dst = protowire.AppendTag(dst, protowire.Number(f.num), protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(int64(f.v)))
		}
	}
	if d.Data != nil {
		dst = protowire.AppendTag(dst, datumData, protowire.BytesType)
		dst = protowire.AppendBytes(dst, d.Data)
	}
	dst = protowire.AppendTag(dst, datumLabel, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(int64(d.Label)))
	for _, f := range d.FloatData {
		dst = protowire.AppendTag(dst, datumFloatData, protowire.Fixed32Type)
		dst = protowire.AppendFixed32(dst, math.Float32bits(f))
	}
	if d.Encoded {
		dst = protowire.AppendTag(dst, datumEncoded, protowire.VarintType)
		dst = protowire.AppendVarint(dst, 1)
	}
	return dst
}

// Image returns the Datum as an encoded image: Data itself when Encoded
// (its format sniffed), else the raw pixels converted to RGB (or gray) and
// encoded as PNG, so every consumer sees an encoded image.
func (d *Datum) Image() (data []byte, format string, width, height int, err error) {
	if d.Encoded {
		f := Sniff(d.Data)
		if f == "" {
			return nil, "", 0, 0, fmt.Errorf("%w: encoded data of %d bytes in no known image format", ErrBadDatum, len(d.Data))
		}
		return d.Data, f, d.Width, d.Height, nil
	}
	img, err := d.Raw()
	if err != nil {
		return nil, "", 0, 0, err
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, "", 0, 0, err
	}
	return buf.Bytes(), "png", d.Width, d.Height, nil
}

// Raw returns the pixels of a raw (not encoded) Datum as an image: 1
// channel gives *image.Gray, 3 channels (planar BGR) an opaque
// *image.RGBA.
func (d *Datum) Raw() (image.Image, error) {
	if err := d.checkRaw(); err != nil {
		return nil, err
	}
	c, h, w := d.Channels, d.Height, d.Width
	plane := h * w
	if c == 1 {
		g := image.NewGray(image.Rect(0, 0, w, h))
		copy(g.Pix, d.Data)
		return g, nil
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	bp, gp, rp := d.Data[:plane], d.Data[plane:2*plane], d.Data[2*plane:]
	for i := range plane {
		p := img.Pix[4*i : 4*i+4 : 4*i+4]
		p[0], p[1], p[2], p[3] = rp[i], gp[i], bp[i], 255
	}
	return img, nil
}

// Pixels appends the pixels of a raw (not encoded) Datum to dst as a
// raw-pixel image (package imgcodec/rawpix): the header, then Data as
// Caffe stores it, planar BGR for 3 channels, with no conversion. The
// decoders read it as they read a PNG of the same pixels, at the cost of
// a copy. The Datum is checked as Raw checks it.
func (d *Datum) Pixels(dst []byte) ([]byte, error) {
	if err := d.checkRaw(); err != nil {
		return nil, err
	}
	hd := rawpix.Header{Width: d.Width, Height: d.Height, Channels: d.Channels, Layout: rawpix.PlanarBGR}
	dst = slices.Grow(dst, rawpix.HeaderSize+len(d.Data))
	return append(hd.Append(dst), d.Data...), nil
}

// checkRaw reports a Datum that is not raw pixels of a usable shape.
func (d *Datum) checkRaw() error {
	c, h, w := d.Channels, d.Height, d.Width
	if d.Encoded {
		return fmt.Errorf("%w: encoded, not raw", ErrBadDatum)
	}
	if len(d.Data) == 0 && len(d.FloatData) > 0 {
		return fmt.Errorf("%w: float_data Datums are not images", ErrBadDatum)
	}
	if (c != 1 && c != 3) || h <= 0 || w <= 0 || int64(c)*int64(h)*int64(w) > maxDatumPixels {
		return fmt.Errorf("%w: raw shape %dx%dx%d (want 1 or 3 channels)", ErrBadDatum, c, h, w)
	}
	if len(d.Data) != c*h*w {
		return fmt.Errorf("%w: raw data has %d bytes, shape %dx%dx%d needs %d", ErrBadDatum, len(d.Data), c, h, w, c*h*w)
	}
	return nil
}
