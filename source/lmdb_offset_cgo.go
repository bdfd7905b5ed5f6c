//go:build cgo

package source

import (
	"bytes"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/PowerDNS/lmdb-go/lmdb"
)

// ValueOffset returns the byte offset of record i's value in the
// environment's data file (data.mdb), or -1 when it cannot be told. LMDB
// maps the file and hands out values in place: a value lies in a page
// (a leaf page, or the first of its overflow pages) whose header starts
// with the page's number, so its offset is that number times the page
// size plus the value's place in the page. The offset is checked against
// the file's bytes before it is returned.
func (db *LMDB) ValueOffset(i int) int64 {
	st, err := db.env.Stat()
	if err != nil || st.PSize == 0 || st.PSize&(st.PSize-1) != 0 || int(st.PSize) > os.Getpagesize() {
		return -1 // the map's start is aligned to the system's pages only
	}
	psize := uintptr(st.PSize)
	var off int64 = -1
	var head []byte
	db.env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true // the value in the map, not a copy
		v, err := txn.Get(db.dbi, db.keys[i])
		if err != nil || len(v) == 0 {
			return nil
		}
		p := unsafe.Pointer(unsafe.SliceData(v))
		in := uintptr(p) & (psize - 1) // the value's place in its page
		pgno := *(*uint64)(unsafe.Add(p, -int(in)))
		off = int64(pgno)*int64(psize) + int64(in)
		head = bytes.Clone(v[:min(len(v), 64)])
		return nil
	})
	if off < 0 {
		return -1
	}
	data := db.path
	if filepath.Base(data) != "data.mdb" {
		data = filepath.Join(data, "data.mdb")
	}
	f, _, err := OpenFile(data)
	if err != nil {
		return -1
	}
	defer f.Close()
	got := make([]byte, len(head))
	if n, _ := f.ReadAt(got, off); n != len(got) || !bytes.Equal(got, head) {
		return -1 // not where the page says (a map not aligned to the page size)
	}
	return off
}
