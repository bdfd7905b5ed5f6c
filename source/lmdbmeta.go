package source

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// LMDB's meta pages (pages 0 and 1 of data.mdb, as liblmdb's mdb.c lays
// them out on 64-bit hosts): a 16-byte page header, then MDB_meta —
// magic, version, address, map size, two MDB_db records (the first one's
// leading uint32 holds the page size), the last page used, the
// transaction id. The newer of the two valid metas is the database.
const (
	lmdbMagic      = 0xBEEFC0DE
	lmdbPageHeader = 16
	lmdbMetaBytes  = 136 // through mm_txnid
	lmdbMinPage    = 512
	lmdbMaxPage    = 1 << 16
)

// lmdbMeta is what checkLMDBSize needs of a meta page.
type lmdbMeta struct {
	pageSize uint32
	lastPage uint64
	txnid    uint64
}

func parseLMDBMeta(b []byte) (lmdbMeta, bool) {
	if len(b) < lmdbPageHeader+lmdbMetaBytes {
		return lmdbMeta{}, false
	}
	m := b[lmdbPageHeader:]
	le := binary.LittleEndian
	if le.Uint32(m[0:]) != lmdbMagic {
		return lmdbMeta{}, false
	}
	return lmdbMeta{pageSize: le.Uint32(m[24:]), lastPage: le.Uint64(m[120:]), txnid: le.Uint64(m[128:])}, true
}

// checkLMDBSize refuses a data file shorter than its meta page says it is
// (the commonest damage: a copy cut short). liblmdb maps the file and
// follows page numbers up to the last page in use; a page beyond the end
// of the file is a SIGBUS that kills the process, not an error. Pages the
// meta says are in use all lie inside a file that passes.
func checkLMDBSize(data string) error {
	f, err := os.Open(data)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	head := make([]byte, lmdbPageHeader+lmdbMetaBytes)
	if _, err := io.ReadFull(f, head); err != nil {
		return &CorruptError{Path: data, Offset: 0, Reason: fmt.Sprintf("%d bytes: too short for LMDB's meta pages", size)}
	}
	m0, ok := parseLMDBMeta(head)
	if !ok {
		return &CorruptError{Path: data, Offset: 0, Reason: "no LMDB meta page (magic 0xBEEFC0DE) at the start: not an LMDB data file, or damaged"}
	}
	if m0.pageSize < lmdbMinPage || m0.pageSize > lmdbMaxPage || m0.pageSize&(m0.pageSize-1) != 0 {
		return &CorruptError{Path: data, Offset: lmdbPageHeader + 24, Reason: fmt.Sprintf("meta page: page size %d is not a power of two in [%d, %d]", m0.pageSize, lmdbMinPage, lmdbMaxPage)}
	}
	ps := int64(m0.pageSize)
	meta := m0
	if size >= 2*ps {
		if _, err := f.ReadAt(head, ps); err == nil {
			if m1, ok := parseLMDBMeta(head); ok && m1.txnid > m0.txnid {
				meta = m1
			}
		}
	}
	if meta.lastPage > uint64(1)<<40 {
		return &CorruptError{Path: data, Offset: lmdbPageHeader + 120, Reason: fmt.Sprintf("meta page: last page %d is beyond any file", meta.lastPage)}
	}
	need := (int64(meta.lastPage) + 1) * ps
	if need < 2*ps {
		need = 2 * ps // the two meta pages
	}
	if size < need {
		return &CorruptError{Path: data, Offset: size, Reason: fmt.Sprintf(
			"truncated: the meta page (txn %d) says pages 0-%d of %d bytes are in use, %d bytes, and the file has %d",
			meta.txnid, meta.lastPage, ps, need, size)}
	}
	return nil
}

// lmdbDataFile is the data file of the LMDB environment at path.
func lmdbDataFile(path string, dir bool) string {
	if dir {
		return filepath.Join(path, "data.mdb")
	}
	return path
}
