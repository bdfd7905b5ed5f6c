// Package jpegscan checks a JPEG's scans against the work they ask of a
// decoder, from its markers and without decoding: the check imgcodec's
// JPEG decoders make first, for readers that check files without the
// decoders (package source, under which faster pack skips a scan bomb as
// a bad file).
//
// Each scan makes a decoder go over every block of the components it
// codes, however few bytes it holds (one end-of-band run codes 32767
// empty blocks), so a file repeating a scan costs a pass over the image a
// copy: a 672 kB progressive JPEG of 999 scans took 31 s of CPU. A file
// whose scans go over its blocks more than MaxPasses times in all (each
// scan counting the blocks of its components, over the blocks of all
// components), or that has more than MaxScans scans, is corrupt. 64
// passes are what a script coding each of a component's 64 coefficients
// in a scan of its own needs; cjpeg's, jpegtran's and Pillow's
// progressive scripts (10 scans of YCbCr) need about 5.
package jpegscan

import "github.com/faster-training/faster/imgcodec/internal/rawimg"

// The limits; imgcodec's decoders apply the same.
const (
	MaxPasses = rawimg.MaxScanPasses
	MaxScans  = rawimg.MaxScans
)

// Check walks data's markers and returns, for a JPEG whose scans pass the
// limits, the error imgcodec.Decode returns for it: a *CorruptError at the
// offset of the first scan past them, errors.Is(err, imgcodec.ErrCorrupt)
// and a damage kind (source.IsDamage). It returns nil for any other data,
// whatever its damage (a decoder finds that), and stops at the first scan
// of a baseline file coding all its components (libjpeg-turbo decodes it
// in one pass, whatever follows).
func Check(data []byte) error {
	return rawimg.CheckJPEGScans(data, MaxScans, false)
}
