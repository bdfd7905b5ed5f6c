//go:build cgo

// Package sourcetest writes datasets for tests of the packages that read
// them.
package sourcetest

import (
	"fmt"
	"testing"

	"github.com/PowerDNS/lmdb-go/lmdb"
)

// WriteLMDB writes a Caffe-style LMDB in a new temporary directory and
// returns it: value i under the key "%08d_" + keys[i], so the keys sort
// in the order given.
func WriteLMDB(t testing.TB, keys []string, vals [][]byte) string {
	t.Helper()
	dir := t.TempDir()
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
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
		for i, k := range keys {
			if err := txn.Put(dbi, []byte(fmt.Sprintf("%08d_%s", i, k)), vals[i], 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
