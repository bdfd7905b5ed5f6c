package shard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/tfrecord"
)

// FuzzFormats: telling a file's format by its first bytes never fails on
// a regular file, and counting records by their length headers agrees
// with reading them: CountRecords succeeds with n exactly when a
// tfrecord.Reader skips n records to a clean end, and damage is a
// *tfrecord.CorruptError either way.
func FuzzFormats(f *testing.F) {
	var shardBytes bytes.Buffer
	w := tfrecord.NewWriter(&shardBytes)
	w.Write([]byte("a record"))
	w.Write(nil)
	w.Close()
	f.Add(shardBytes.Bytes())
	f.Add(shardBytes.Bytes()[:20])
	tarHead := make([]byte, 512)
	copy(tarHead, "x.cls")
	copy(tarHead[257:], "ustar\x0000")
	f.Add(tarHead)
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	f.Add(append(make([]byte, 16), 0xde, 0xc0, 0xef, 0xbe, 1, 0, 0, 0))
	f.Add([]byte("0 20\n20 16\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := FormatOf(p); err != nil {
			t.Fatalf("FormatOf: %v", err)
		}
		n, err := CountRecords(context.Background(), p)
		var ce *tfrecord.CorruptError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("CountRecords: %v, want a CorruptError", err)
		}
		r := tfrecord.NewReader(bytes.NewReader(data), tfrecord.WithVerify(false))
		m := 0
		var rerr error
		for {
			if rerr = r.Skip(); rerr != nil {
				break
			}
			m++
		}
		switch {
		case err == nil && (rerr != io.EOF || m != n):
			t.Fatalf("counted %d records, the reader skips %d then %v", n, m, rerr)
		case err != nil && rerr == io.EOF:
			t.Fatalf("counting failed (%v), the reader skips %d records to the end", err, m)
		}
	})
}
