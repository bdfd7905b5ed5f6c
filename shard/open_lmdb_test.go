//go:build cgo

package shard

import (
	"fmt"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/source/sourcetest"
)

// TestOpenLMDB: a Caffe LMDB opens as an indexed dataset of kind "lmdb",
// one record per key, IDs the global index.
func TestOpenLMDB(t *testing.T) {
	var keys []string
	var vals [][]byte
	for i := range 5 {
		keys = append(keys, fmt.Sprintf("c/%d.jpg", i))
		vals = append(vals, (&source.Datum{Data: jpegBytes(t, 8, 8, i), Encoded: true, Label: i % 2}).Marshal(nil))
	}
	dir := sourcetest.WriteLMDB(t, keys, vals)
	x := wantIndexed(t, open(t, dir, OpenOptions{}), "lmdb", 5)
	r, err := x.Record(3)
	if err != nil || r.ID != 3 || r.Key != "c/3.jpg" || r.Label != 1 || r.Path != dir || r.Offset != -1 || len(r.Data) == 0 {
		t.Fatalf("record 3: %+v %v", r, err)
	}
}
