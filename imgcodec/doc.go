// Package imgcodec decodes images for training pipelines: JPEG through
// libjpeg-turbo (package imgcodec/turbojpeg, cgo); PNG, GIF, WebP, BMP and
// TIFF through Go's image packages (golang.org/x/image for the last
// three); PPM/PGM/PBM by its own reader; and any other format registered
// by RegisterFormat. Every format torchvision's ImageFolder lists decodes
// to the pixels of PIL's Image.open(p).convert("RGB") (Pillow 9.4, its
// loader), exactly (TestDecodeMatchesPIL): lossy WebP with libwebp's fancy
// chroma upsampling and studio-swing matrix, a GIF's first frame on its
// logical screen with its transparent index's palette colour, 16-bit gray
// clipped to 255 (PIL's mode I), 16-bit colour by its high byte, PNM of
// any maxval scaled as PIL rounds.
//
// # Decoding
//
//	img, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{ScaleDenom: 2, Crop: r})
//	if err != nil { ... }           // errors.Is(err, imgcodec.ErrCorrupt): skip the sample
//	defer img.Release()             // back to the pool
//	px := img.Pix[y*img.Stride+x*img.Channels:][:img.Channels]
//
// The output is always interleaved 8-bit (HWC): 3 channels RGB, or 1 (luma)
// with DecodeOptions.Gray. Grayscale files are expanded to RGB unless Gray
// is set; CMYK and YCCK JPEGs (Adobe, channels stored inverted) are
// converted to RGB with image/color's formula; the alpha of PNG and GIF is
// dropped (straight, not premultiplied, colour is kept).
//
// # Format detection
//
// The format is found by the leading magic bytes, never the file name:
// a PNG named .JPEG decodes as PNG. Formats are tried in registration
// order; data shorter than a signature it begins is ErrTruncated.
//
//	jpeg  FF D8
//	png   89 50 4E 47 0D 0A 1A 0A
//	gif   "GIF87a" / "GIF89a"
//	raw   89 52 41 57 0D 0A 1A 0A  ("\x89RAW\r\n\x1a\n": uncompressed pixels, package rawpix)
//	webp  "RIFF" ???? "WEBP"
//	bmp   "BM"
//	tiff  "II*\x00" / "MM\x00*"
//	pnm   "P1".."P6" and white space
//
// The raw format is what a reader holding pixels rather than a file (a
// Caffe Datum that is not encoded) hands on: a 20-byte header (size,
// channels, interleaved RGB or planar BGR) and the pixels. Decoding it is
// a copy into interleaved RGB with the box downscale and crop below, the
// same bytes a PNG of those pixels decodes to.
//
// # Geometry: scale and crop
//
// ScaleDenom d in {1, 2, 4, 8} gives an output of ceil(W/d) x ceil(H/d),
// as libjpeg computes it. libjpeg-turbo reaches it in the DCT domain
// (cheaper than a full decode); the pure-Go JPEG decoder and the Go image
// formats decode at full size and average d x d boxes (edge boxes average
// the pixels they cover), so every decoder returns the same size and
// nearly the same pixels (DCT scaling is close to a box filter: above
// 30 dB PSNR apart on photographs, 50 dB typically).
//
// Crop, in the coordinates of the scaled output, returns exactly the
// pixels of the full (scaled) decode in that rectangle; libjpeg-turbo
// decodes only the MCU columns and rows the crop needs, plus a small
// margin so that chroma upsampling at the crop's edges matches a full
// decode. A crop outside the scaled image is ErrInvalidOptions.
//
// # Limits and errors
//
// MaxPixels (default DefaultMaxPixels) bounds width*height, read from the
// header before any pixel buffer is allocated: ErrTooLarge. A JPEG whose
// scans would make the decoder go over its blocks more than 64 times in
// all (a scan bomb: each scan is a pass over the image however few bytes
// it holds) is ErrCorrupt, refused from a walk of its markers before
// decoding (package jpegscan, which readers that do not decode call too). Truncated data
// is ErrTruncated, unless AllowTruncated, in which case libjpeg-turbo
// returns the image with the missing part grey and Image.Warning set (the
// pure-Go decoder can recover only some truncated files and returns
// ErrTruncated for the rest). All bad-data errors are *CorruptError and
// satisfy errors.Is(err, ErrCorrupt), truncation included; ErrUnsupported
// marks valid files using features a decoder lacks (12-bit JPEG, and
// arithmetic coding in the pure-Go decoder); ErrUnknownFormat data that no
// format recognises. No input makes a decoder panic or end the process:
// libjpeg's fatal errors longjmp back to the wrapper, and FuzzDecode checks
// this.
//
// # Memory
//
// Decoded Images and their pixel buffers come from size-class pools
// (powers of two up to MaxPooledBytes; larger buffers are not pooled);
// Release returns them, so that a steady decode loop allocates nothing.
// An Image must not be used after Release. NewImage takes an Image from
// the same pools for code that produces pixels (resizing, augmentation).
//
// # Encoding
//
// EncodeJPEG writes an RGB or gray Image as a baseline JPEG with 4:2:0
// chroma subsampling: libjpeg-turbo with cgo, image/jpeg without.
//
// # Backends
//
// With cgo, JPEG goes to libjpeg-turbo (Backend == "libjpeg-turbo");
// built with CGO_ENABLED=0, to the pure-Go decoder (Backend == "pure-go"),
// which passes the same conformance suite: its output equals image/jpeg's
// exactly, and libjpeg-turbo's is within 40 dB PSNR of it.
//
// # Concurrency
//
// Decode, DecodeConfig, EncodeJPEG, NewImage and Release are safe for
// concurrent use; an Image is not (one goroutine owns it until Release).
// RegisterFormat is meant for init functions but is safe at any time.
package imgcodec
