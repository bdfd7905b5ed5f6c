//go:build cgo

package shard

import (
	"fmt"
	"testing"

	"github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/faster-training/faster/source"
)

// TestOpenLMDB: a Caffe LMDB opens as an indexed dataset of kind "lmdb",
// one record per key, IDs the global index.
func TestOpenLMDB(t *testing.T) {
	dir := t.TempDir()
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.SetMapSize(64 << 20); err != nil {
		t.Fatal(err)
	}
	if err := env.Open(dir, 0, 0o644); err != nil {
		t.Fatal(err)
	}
	err = env.Update(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		for i := range 5 {
			v := (&source.Datum{Data: jpegBytes(t, 8, 8, i), Encoded: true, Label: i % 2}).Marshal(nil)
			if err := txn.Put(dbi, []byte(fmt.Sprintf("%08d_c/%d.jpg", i, i)), v, 0); err != nil {
				return err
			}
		}
		return nil
	})
	env.Close()
	if err != nil {
		t.Fatal(err)
	}
	x := wantIndexed(t, open(t, dir, OpenOptions{}), "lmdb", 5)
	r, err := x.Record(3)
	if err != nil || r.ID != 3 || r.Key != "c/3.jpg" || r.Label != 1 || r.Path != dir || r.Offset != -1 || len(r.Data) == 0 {
		t.Fatalf("record 3: %+v %v", r, err)
	}
}
