//go:build linux && cgo

package serve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/source/sourcetest"
)

// lmdbOf writes the ImageFolder under folder as a Caffe LMDB of encoded
// Datums (the LMDB writer needs cgo).
func lmdbOf(t *testing.T, folder string) string {
	src, err := source.OpenImageFolder(folder)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var vals [][]byte
	for _, it := range src.Items() {
		b, err := os.ReadFile(filepath.Join(folder, it.Key))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, it.Key)
		vals = append(vals, (&source.Datum{Data: b, Encoded: true, Label: it.Label}).Marshal(nil))
	}
	return sourcetest.WriteLMDB(t, keys, vals)
}
