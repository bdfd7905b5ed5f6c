package shard

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/faster-training/faster/source"
)

// verifyTar checks a WebDataset tar shard: every header and member is
// present in full, nothing but zero padding follows the end-of-archive
// blocks, the wds2idx index beside it matches, and the manifest's count,
// size and sha256 hold.
func verifyTar(ctx context.Context, t target, progress func(int64)) (records, size int64, probs []Problem) {
	bad := func(off int64, format string, a ...any) {
		probs = append(probs, Problem{Path: t.path, Offset: off, Reason: fmt.Sprintf(format, a...)})
	}
	f, _, err := source.OpenFile(t.path)
	if err != nil {
		bad(-1, "%v", unwrapPath(err))
		return 0, 0, probs
	}
	defer f.Close()
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(f, h), progress: progress}
	tr := tar.NewReader(cr)
	var found []source.WDSIndexSample
	lastKey := ""
	for {
		if ctx.Err() != nil {
			return records, cr.n, probs
		}
		hdrOff := cr.n
		hd, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				bad(hdrOff, "truncated tar header")
			} else {
				bad(hdrOff, "bad tar header: %v", err)
			}
			return int64(len(found)), cr.n, probs
		}
		dataOff := cr.n
		key, ext := wdsSplitName(hd.Name)
		var img *bytes.Buffer // an image member is read to check its header
		var dst io.Writer = io.Discard
		if hd.Typeflag == tar.TypeReg && isImageMember(ext) && hd.Size <= source.MaxFileSize {
			img = bytes.NewBuffer(make([]byte, 0, hd.Size))
			dst = img
		}
		n, err := io.Copy(dst, tr)
		if err != nil || n != hd.Size {
			bad(hdrOff, "member %q: %d of %d data bytes present (truncated)", hd.Name, n, hd.Size)
			return int64(len(found)), cr.n, probs
		}
		if hd.Typeflag != tar.TypeReg {
			continue
		}
		if key == "" || strings.HasSuffix(key, "/") {
			continue
		}
		if img != nil {
			if p := imageProblem(img.Bytes(), hd.Name); p != "" {
				bad(dataOff, "%s", p)
			}
		}
		m := source.WDSIndexMember{Ext: ext, Offset: dataOff, Size: hd.Size, Name: hd.Name}
		if len(found) == 0 || key != lastKey {
			found = append(found, source.WDSIndexSample{})
			lastKey = key
		}
		found[len(found)-1].Members = append(found[len(found)-1].Members, m)
	}
	// After the end-of-archive blocks only zero padding may follow.
	endOff := cr.n
	buf := make([]byte, 64<<10)
	for {
		k, err := cr.Read(buf)
		if i := bytes.IndexFunc(buf[:k], func(r rune) bool { return r != 0 }); i >= 0 {
			bad(endOff, "data after the end of the archive")
			_, _ = io.Copy(io.Discard, cr)
			break
		}
		endOff += int64(k)
		if err != nil {
			break
		}
	}
	records, size = int64(len(found)), cr.n

	ip := t.indexPath(filepath.Base(source.WDSIndexName(t.path))) // the index the reader uses (DALI's naming)
	if b, err := source.ReadFile(ip, MaxManifestSize); err == nil {
		probs = append(probs, compareWDSIndex(ip, b, found)...)
	} else if t.want != nil {
		probs = append(probs, Problem{Path: ip, Offset: -1, Reason: "index file missing"})
	}
	probs = append(probs, t.checkManifest("samples", records, size, h.Sum(nil))...)
	return records, size, probs
}

// verifyTarGz checks a gzip-compressed WebDataset tar: the gzip stream
// (its CRC and length) and every tar header and member in it, and that
// only zero padding follows the end-of-archive blocks. Offsets are in the
// decompressed tar. Such a tar has no index (DALI's wds2idx indexes plain
// tars only) and no manifest lists it.
func verifyTarGz(ctx context.Context, t target, progress func(int64)) (records, size int64, probs []Problem) {
	bad := func(off int64, format string, a ...any) {
		probs = append(probs, Problem{Path: t.path, Offset: off, Reason: fmt.Sprintf(format, a...)})
	}
	f, _, err := source.OpenFile(t.path)
	if err != nil {
		bad(-1, "%v", unwrapPath(err))
		return 0, 0, probs
	}
	defer f.Close()
	fr := &countingReader{r: f, progress: progress}
	zr, err := gzip.NewReader(fr)
	if err != nil {
		bad(0, "gzip: %v", err)
		return 0, fr.n, probs
	}
	if err := gzipHoldsTar(t.path); err != nil {
		bad(0, "%v", unwrapPath(err))
		return 0, fr.n, probs
	}
	cr := &countingReader{r: zr}
	tr := tar.NewReader(cr)
	lastKey := ""
	gzBad := func(off int64, what string, err error) {
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			bad(off, "%s: the gzip stream ends early (truncated; offset in the decompressed tar)", what)
		default:
			bad(off, "%s: %v (offset in the decompressed tar)", what, err)
		}
	}
	for {
		if ctx.Err() != nil {
			return records, fr.n, probs
		}
		hdrOff := cr.n
		hd, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			gzBad(hdrOff, "tar header", err)
			return records, fr.n, probs
		}
		if n, err := io.Copy(io.Discard, tr); err != nil || n != hd.Size {
			gzBad(hdrOff, fmt.Sprintf("member %q", hd.Name), cmpErr(err, io.ErrUnexpectedEOF))
			return records, fr.n, probs
		}
		if hd.Typeflag != tar.TypeReg {
			continue
		}
		key, _ := wdsSplitName(hd.Name)
		if key == "" || strings.HasSuffix(key, "/") {
			continue
		}
		if records == 0 || key != lastKey {
			records++
			lastKey = key
		}
	}
	endOff := cr.n
	buf := make([]byte, 64<<10)
	for {
		k, err := cr.Read(buf)
		if bytes.IndexFunc(buf[:k], func(r rune) bool { return r != 0 }) >= 0 {
			bad(endOff, "data after the end of the archive (offset in the decompressed tar)")
			break
		}
		endOff += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			gzBad(endOff, "after the end of the archive", err)
			break
		}
	}
	return records, fr.n, probs
}

// cmpErr is err, or def when err is nil.
func cmpErr(err, def error) error {
	if err == nil {
		return def
	}
	return err
}

// wdsSplitName splits a member name at the first dot of its base name.
func wdsSplitName(name string) (key, ext string) {
	slash := strings.LastIndexByte(name, '/') + 1
	dot := strings.IndexByte(name[slash:], '.')
	if dot < 0 {
		return name, ""
	}
	return name[:slash+dot], name[slash+dot+1:]
}

// compareWDSIndex compares a wds2idx index with the members found: in
// its own version, v1.2 (ext offset size name) or the legacy v1.1 and
// v1.0 (ext offset size).
func compareWDSIndex(ip string, b []byte, found []source.WDSIndexSample) []Problem {
	var want bytes.Buffer
	source.WriteWDSIndex(&want, found)
	got := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	exp := strings.Split(strings.TrimRight(want.String(), "\n"), "\n")
	if v := strings.Fields(got[0]); len(v) > 0 && (v[0] == "v1.1" || v[0] == "v1.0") {
		exp[0] = v[0] + strings.TrimPrefix(exp[0], "v1.2")
		for i, s := range found {
			var parts []string
			for _, m := range s.Members {
				parts = append(parts, fmt.Sprintf("%s %d %d", m.Ext, m.Offset, m.Size))
			}
			exp[i+1] = strings.Join(parts, " ")
		}
	}
	for i := range min(len(got), len(exp)) {
		if strings.Join(strings.Fields(got[i]), " ") != exp[i] {
			return []Problem{{Path: ip, Offset: -1, Reason: fmt.Sprintf("line %d says %q, tar has %q", i+1, got[i], exp[i])}}
		}
	}
	if len(got) != len(exp) {
		return []Problem{{Path: ip, Offset: -1, Reason: fmt.Sprintf("%d lines, tar needs %d", len(got), len(exp))}}
	}
	return nil
}

// verifyLMDB checks that every value of a Caffe LMDB decodes as a Datum
// holding an image.
func verifyLMDB(ctx context.Context, t target, progress func(int64)) (records, size int64, probs []Problem) {
	db, err := source.OpenLMDB(t.path)
	if err != nil {
		return 0, 0, []Problem{{Path: t.path, Offset: -1, Reason: err.Error()}}
	}
	defer db.Close()
	for i, it := range db.Items() {
		if ctx.Err() != nil {
			break
		}
		s, err := db.Load(i)
		if progress != nil {
			progress(it.Size)
		}
		size += it.Size
		if err != nil {
			reason := err.Error()
			var ce *source.CorruptError
			if errors.As(err, &ce) {
				reason = fmt.Sprintf("key %q: %s", it.Key, ce.Reason)
			}
			probs = append(probs, Problem{Path: t.path, Offset: -1, Reason: reason})
			continue
		}
		_ = s
		records++
	}
	return records, size, probs
}
