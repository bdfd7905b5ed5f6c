//go:build !cgo

package source

import "fmt"

// LMDB is a Caffe-style LMDB database. This build has no cgo, so it cannot
// be opened: OpenLMDB returns ErrNoCgo.
type LMDB struct{ path string }

// OpenLMDB returns ErrNoCgo: the LMDB library is C.
func OpenLMDB(path string) (*LMDB, error) { return nil, fmt.Errorf("%s: %w", path, ErrNoCgo) }

// Close does nothing.
func (db *LMDB) Close() error { return nil }

// Kind returns "lmdb".
func (db *LMDB) Kind() string { return "lmdb" }

// Classes returns nil.
func (db *LMDB) Classes() []string { return nil }

// Items returns nil.
func (db *LMDB) Items() []Item { return nil }

// Path returns the environment's path.
func (db *LMDB) Path() string { return db.path }

// Load fails with ErrNoCgo.
func (db *LMDB) Load(i int) (Sample, error) { return Sample{}, ErrNoCgo }

// pixels fails with ErrNoCgo.
func (db *LMDB) pixels(i int) (Sample, error) { return Sample{}, ErrNoCgo }

// Raw fails with ErrNoCgo.
func (db *LMDB) Raw(i int) ([]byte, error) { return nil, ErrNoCgo }

// ValueOffset returns -1.
func (db *LMDB) ValueOffset(i int) int64 { return -1 }
