//go:build cgo

package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/source/sourcetest"
)

// writeLMDB writes an LMDB of n Datums of size bytes each (several pages).
func writeLMDB(t testing.TB, n, size int) string {
	keys := make([]string, n)
	vals := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("img%03d.jpg", i)
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(i + j)
		}
		vals[i] = (&Datum{Channels: 1, Height: 1, Width: size, Data: data, Label: i % 3}).Marshal(nil)
	}
	return sourcetest.WriteLMDB(t, keys, vals)
}

// A data.mdb cut short anywhere — the commonest damage — is refused at open
// with the file and what its meta page says; before, liblmdb followed page
// numbers past the end of the mapping and the process died of SIGBUS
// (verify, inspect, bench load, pack alike).
func TestTruncatedLMDBIsAnError(t *testing.T) {
	dir := writeLMDB(t, 40, 3000) // values on overflow pages: the file is many pages long
	whole, err := os.ReadFile(filepath.Join(dir, "data.mdb"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenLMDB(dir)
	if err != nil {
		t.Fatalf("the whole LMDB: %v", err)
	}
	for i := range db.Items() {
		if _, err := db.Load(i); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	n := len(whole)
	for _, size := range []int{0, 100, 4096, 8192, 8192 + 1, n / 2, n - 4096, n - 1} {
		cut := filepath.Join(t.TempDir(), "data.mdb")
		if err := os.WriteFile(cut, whole[:size], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{cut, filepath.Dir(cut)} {
			_, err := OpenLMDB(path)
			if err == nil {
				t.Fatalf("%d of %d bytes (%s): opened", size, n, path)
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), cut) {
				t.Fatalf("%d of %d bytes: %v; want a corrupt-data error naming %s", size, n, err, cut)
			}
		}
	}
}

// FuzzLMDBMeta: whatever the first pages of data.mdb hold, the size check
// answers without panicking, and liblmdb never opens a file the check
// refuses. Seeded with a real LMDB's first two pages.
func FuzzLMDBMeta(f *testing.F) {
	dir := writeLMDB(f, 3, 100)
	whole, err := os.ReadFile(filepath.Join(dir, "data.mdb"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(whole[:min(len(whole), 8192)], int64(len(whole)))
	f.Fuzz(func(t *testing.T, head []byte, size int64) {
		if size < int64(len(head)) || size > 1<<20 {
			return
		}
		p := filepath.Join(t.TempDir(), "data.mdb")
		if err := os.WriteFile(p, head, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		err := checkLMDBSize(p)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v: not a corrupt-data error", err)
		}
	})
}
