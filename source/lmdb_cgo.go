//go:build cgo

package source

import (
	"fmt"
	"os"
	"slices"

	"github.com/PowerDNS/lmdb-go/lmdb"
)

// LMDB is a Caffe-style LMDB database: every value a serialized Datum
// (an encoded image, or raw planar BGR pixels), keys such as
// "%08d_<path>". Items are the keys in the database's (sorted) order;
// their labels are read once at open. Load is safe for concurrent use.
type LMDB struct {
	path    string
	env     *lmdb.Env
	dbi     lmdb.DBI
	keys    [][]byte
	items   []Item
	classes []string
}

// OpenLMDB opens the LMDB environment at path (a directory with data.mdb,
// or the data.mdb file) read-only and lists its records.
func OpenLMDB(path string) (*LMDB, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkLMDBFiles(path, st.IsDir()); err != nil {
		return nil, err
	}
	env, err := lmdb.NewEnv()
	if err != nil {
		return nil, err
	}
	flags := uint(lmdb.Readonly | lmdb.NoTLS | lmdb.NoReadahead)
	if !st.IsDir() {
		flags |= lmdb.NoSubdir
	}
	if err := env.SetMaxReaders(1024); err != nil {
		env.Close()
		return nil, err
	}
	if err := env.Open(path, flags, 0o644); err != nil {
		env.Close()
		return nil, fmt.Errorf("%s: open LMDB: %w", path, err)
	}
	db := &LMDB{path: path, env: env}
	maxLabel := 0
	err = env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		db.dbi = dbi
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		for {
			k, v, err := cur.Get(nil, nil, lmdb.Next)
			if lmdb.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			it := Item{Key: lmdbItemKey(k), Size: int64(len(v))}
			// The label sits after the image data; a damaged value keeps
			// label 0 here and is reported by Load.
			if d, err := DecodeDatum(v); err == nil {
				it.Label = max(d.Label, 0)
				if it.Label <= MaxLabel {
					maxLabel = max(maxLabel, it.Label)
				}
			}
			db.keys = append(db.keys, slices.Clone(k))
			db.items = append(db.items, it)
		}
	})
	if err != nil {
		env.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	db.classes = lmdbClasses(maxLabel)
	return db, nil
}

// Close releases the environment.
func (db *LMDB) Close() error { return db.env.Close() }

// Kind returns "lmdb".
func (db *LMDB) Kind() string { return "lmdb" }

// Classes returns the label numbers as names ("0", "1", …).
func (db *LMDB) Classes() []string { return db.classes }

// Items returns one item per record, in key order.
func (db *LMDB) Items() []Item { return db.items }

// Path returns the environment's path.
func (db *LMDB) Path() string { return db.path }

// Load reads record i and returns its image: the encoded bytes of an
// encoded Datum, or a PNG of a raw one. A value that is not a Datum gives
// a *CorruptError naming the key.
func (db *LMDB) Load(i int) (Sample, error) {
	it := db.items[i]
	var val []byte
	err := db.env.View(func(txn *lmdb.Txn) error {
		v, err := txn.Get(db.dbi, db.keys[i]) // a copy: valid after the txn
		val = v
		return err
	})
	if err != nil {
		return Sample{Item: it}, fmt.Errorf("%s: key %q: %w", db.path, db.keys[i], err)
	}
	return datumSample(it, db.path, val, false)
}

// pixels reads record i as Record serves it: a raw Datum's pixels as a
// raw-pixel image, an encoded Datum's image bytes, read in place from the
// map and copied once.
func (db *LMDB) pixels(i int) (Sample, error) {
	it := db.items[i]
	var s Sample
	var serr error
	err := db.env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true // the map's memory: valid until the txn ends
		v, err := txn.Get(db.dbi, db.keys[i])
		if err != nil {
			return err
		}
		s, serr = datumSample(it, db.path, v, true)
		return nil
	})
	if err != nil {
		return Sample{Item: it}, fmt.Errorf("%s: key %q: %w", db.path, db.keys[i], err)
	}
	return s, serr
}

// Raw returns record i's stored value.
func (db *LMDB) Raw(i int) ([]byte, error) {
	var val []byte
	err := db.env.View(func(txn *lmdb.Txn) error {
		v, err := txn.Get(db.dbi, db.keys[i])
		val = v
		return err
	})
	return val, err
}

// Stamp implements Stamper: the stamp of the data file (data.mdb).
func (db *LMDB) Stamp(int) (string, error) {
	st, err := os.Stat(db.path)
	if err != nil {
		return "", err
	}
	return FileStamp(lmdbDataFile(db.path, st.IsDir()))
}
