package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// One definition of damage for every room: each kind of damaged data is
// damage, bare or wrapped; a failure to read (cancellation, a missing
// dataset, a full disk, a caller's bad options) is not. The rows are what
// shard.IsDamage and loader.isBadData answered before they became
// source.IsDamage (the loader's list, which held the decoder's errors too).
func TestIsDamage(t *testing.T) {
	tfc := &tfrecord.CorruptError{Path: "a.tfrecord", Offset: 40, Reason: "data CRC mismatch"}
	src := &source.CorruptError{Path: "data.mdb", Key: "k1", Offset: -1, Reason: "not a Datum"}
	file := &source.FileError{Path: "x.JPEG", Reason: "not a regular file (named pipe)"}
	img := &imgcodec.CorruptError{Format: "jpeg", Offset: 12, Err: imgcodec.ErrTruncated}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"tfrecord.CorruptError", tfc, true},
		{"tfrecord.ErrCorrupt", tfrecord.ErrCorrupt, true},
		{"source.CorruptError", src, true},
		{"source.ErrNotImage", fmt.Errorf("x.JPEG: %w: unknown format", source.ErrNotImage), true},
		{"source.FileError", file, true},
		{"tfexample.ErrMalformed", fmt.Errorf("record 3: %w", tfexample.ErrMalformed), true},
		{"imgcodec.CorruptError", img, true},
		{"imgcodec.ErrUnknownFormat", imgcodec.ErrUnknownFormat, true},
		{"imgcodec.ErrUnsupported", imgcodec.ErrUnsupported, true},
		{"imgcodec.ErrTooLarge", fmt.Errorf("decode: %w", imgcodec.ErrTooLarge), true},
		{"context.Canceled", context.Canceled, false},
		{"a missing dataset", &fs.PathError{Op: "open", Path: "/data", Err: fs.ErrNotExist}, false},
		{"a full disk", &fs.PathError{Op: "write", Path: "/out", Err: syscall.ENOSPC}, false},
		{"io.ErrUnexpectedEOF alone", io.ErrUnexpectedEOF, false},
		{"imgcodec.ErrInvalidOptions", imgcodec.ErrInvalidOptions, false},
		{"nil", nil, false},
	} {
		for _, err := range []error{c.err, fmt.Errorf("epoch 2: %w", c.err)} {
			if c.err == nil && err != nil {
				continue
			}
			if got := source.IsDamage(err); got != c.want {
				t.Errorf("%s (%v): IsDamage = %v, want %v", c.name, err, got, c.want)
			}
		}
	}
	// The sentinels keep their identity and text.
	if !errors.Is(fmt.Errorf("w: %w", tfc), tfrecord.ErrCorrupt) || tfrecord.ErrCorrupt.Error() != "tfrecord: corrupt data" {
		t.Error("tfrecord.ErrCorrupt changed")
	}
}

// DamageOf reads where and why from the Damaged error at any depth, else
// takes what the caller knows.
func TestDamageOf(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want source.Damage
	}{
		{"tfrecord", fmt.Errorf("read: %w", &tfrecord.CorruptError{Path: "a.tfrecord", Offset: 40, Reason: "data CRC mismatch"}),
			source.Damage{Path: "a.tfrecord", Offset: 40, Key: "given", Reason: "data CRC mismatch"}},
		{"source with a key", &source.CorruptError{Path: "data.mdb", Key: "k1", Offset: -1, Reason: "not a Datum"},
			source.Damage{Path: "data.mdb", Offset: -1, Key: "k1", Reason: "not a Datum"}},
		{"a refused path", &source.FileError{Path: "x.JPEG", Reason: "not a regular file"},
			source.Damage{Path: "x.JPEG", Offset: -1, Key: "given", Reason: "not a regular file"}},
		{"a decoder's error: the caller's position", fmt.Errorf("x.JPEG: %w", imgcodec.ErrUnknownFormat),
			source.Damage{Path: "shard.tfrecord", Offset: 7, Key: "given", Reason: "x.JPEG: unknown image format"}},
	} {
		if got := source.DamageOf(c.err, "shard.tfrecord", 7, "given"); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
