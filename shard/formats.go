package shard

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfrecord"
)

// sniffLen is how many leading bytes of a file tell the container formats
// apart: a tar header is 512 bytes (magic at 257, checksum over all 512).
const sniffLen = 512

// A containerFormat is a container format that Open tells by its first
// bytes, as imgcodec tells images by their magic, never by a chain of
// file-name suffixes: a shard named train-00000-of-01024 (TensorFlow's
// ImageNet scripts write no extension) is a TFRecord file because its
// first length field carries a valid CRC.
type containerFormat struct {
	name string
	// match reports whether head, a file's first sniffLen bytes (fewer
	// when the file is shorter; never empty), begins a file of this format.
	match func(head []byte) bool
	// exts are the file-name suffixes of the format, read as it only when
	// the first bytes match no format (damage at offset 0 is then this
	// format's reader's error, with its offset, not "unknown format").
	exts []string
	// open opens local files of this format (at least one, each
	// recognised) as one dataset.
	open func(ctx context.Context, files []string, o OpenOptions) (source.Dataset, error)
	// verify checks one file of the format (faster verify): every record
	// or member, its index, the manifest's figures.
	verify func(ctx context.Context, t target, progress func(int64)) (records, size int64, probs []Problem)
}

// formats is the registry, in the order files are matched against it.
var formats []*containerFormat

// registerFormat adds f to the registry.
func registerFormat(f *containerFormat) { formats = append(formats, f) }

func init() {
	registerFormat(&containerFormat{name: "tfrecord", match: isTFRecordHead, exts: []string{".tfrecord", ".tfrecords"},
		open: func(ctx context.Context, files []string, o OpenOptions) (source.Dataset, error) {
			return openShards(ctx, localFiles{}, files, o)
		}, verify: verifyShard})
	registerFormat(&containerFormat{name: "tar", match: isTarHead, exts: []string{".tar"},
		open: func(_ context.Context, files []string, o OpenOptions) (source.Dataset, error) {
			return openWDS(files, o)
		}, verify: verifyTar})
	registerFormat(&containerFormat{name: "gzip", match: isGzipHead, exts: []string{".tgz", ".gz"},
		open: openTarGz, verify: verifyTarGz}) // gzip-compressed tars (shard/targz.go); other gzip files are refused naming gzip
	registerFormat(&containerFormat{name: "lmdb", match: isLMDBHead, exts: []string{".mdb"},
		open: func(_ context.Context, files []string, _ OpenOptions) (source.Dataset, error) {
			if len(files) > 1 {
				return nil, fmt.Errorf("%s, %s: one LMDB is one dataset; give its directory", files[0], files[1])
			}
			return openLMDB(files[0])
		}, verify: verifyLMDB})
}

// isTFRecordHead: a TFRecord file starts with a record's 8-byte length
// and the masked CRC-32C of those 8 bytes (chance agreement: 2^-32).
func isTFRecordHead(h []byte) bool {
	return len(h) >= tfrecord.HeaderSize && tfrecord.MaskedCRC(h[:8]) == binary.LittleEndian.Uint32(h[8:12])
}

// isTarHead: a tar file starts with a member header: "ustar" at offset 257
// (POSIX ustar and pax: "ustar\x0000"; GNU: "ustar  \x00"), or, in a v7
// tar without magic, a header whose checksum field holds the sum of its
// bytes (the field itself counted as spaces).
func isTarHead(h []byte) bool {
	if len(h) < 512 {
		return false
	}
	if string(h[257:262]) == "ustar" {
		return true
	}
	return tarChecksumOK(h[:512])
}

// tarChecksumOK checks a 512-byte tar header's checksum field (octal,
// ended by NUL or space) against the unsigned and the signed sums of the
// header (historic tars wrote either).
func tarChecksumOK(h []byte) bool {
	field := strings.TrimRight(strings.TrimLeft(string(h[148:156]), " "), " \x00")
	if field == "" {
		return false
	}
	want, err := strconv.ParseInt(field, 8, 64)
	if err != nil {
		return false
	}
	var unsigned, signed int64
	for i, b := range h {
		if i >= 148 && i < 156 {
			b = ' '
		}
		unsigned += int64(b)
		signed += int64(int8(b))
	}
	return want == unsigned || want == signed
}

// isGzipHead: gzip's magic 1f 8b.
func isGzipHead(h []byte) bool { return len(h) >= 2 && h[0] == 0x1f && h[1] == 0x8b }

// lmdbMagic is the magic of an LMDB meta page (MDB_meta.mm_magic), after
// the page header: 16 bytes on 64-bit builds, 12 on 32-bit ones.
const lmdbMagic = 0xBEEFC0DE

func isLMDBHead(h []byte) bool {
	for _, at := range []int{16, 12} {
		if len(h) >= at+4 && binary.LittleEndian.Uint32(h[at:]) == lmdbMagic {
			return true
		}
	}
	return false
}

// formatByName returns the registered format called name.
func formatByName(name string) *containerFormat {
	for _, f := range formats {
		if f.name == name {
			return f
		}
	}
	return nil
}

// matchHead returns the format whose magic head starts with, or nil.
func matchHead(head []byte) *containerFormat {
	for _, f := range formats {
		if f.match(head) {
			return f
		}
	}
	return nil
}

// matchExt returns the format a file name's suffix names, or nil.
func matchExt(name string) *containerFormat {
	for _, f := range formats {
		for _, e := range f.exts {
			if strings.HasSuffix(strings.ToLower(name), e) {
				return f
			}
		}
	}
	return nil
}

// readHead reads up to sniffLen bytes of a local file (regular files only:
// a FIFO is refused, not waited on).
func readHead(path string) ([]byte, error) {
	f, _, err := source.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return head[:n], nil
}

// FormatOf names the container format of a local file by its first bytes:
// "tfrecord", "tar", "gzip" or "lmdb" (an LMDB's data.mdb), or "" when
// they match none (or the file is empty).
func FormatOf(path string) (string, error) {
	head, err := readHead(path)
	if err != nil {
		return "", err
	}
	if f := matchHead(head); f != nil {
		return f.name, nil
	}
	return "", nil
}

// verifierOf returns how to verify the file (or LMDB directory) at path:
// its format's, told by its first bytes, else by its name; a file of no
// format is checked as a TFRecord, which reports what it finds.
func verifierOf(path string) func(context.Context, target, func(int64)) (int64, int64, []Problem) {
	if source.IsLMDB(path) {
		return verifyLMDB
	}
	head, _ := readHead(path) // an unreadable file: its verifier reports it
	f := matchHead(head)
	if f == nil {
		f = matchExt(path)
	}
	if f == nil || f.verify == nil {
		return verifyShard
	}
	return f.verify
}

// shardNameRE matches shard names as packers write them:
// "<split>-00007-of-01024" with no extension (TensorFlow's
// build_imagenet_data.py), or with ".tfrecord", ".tfrecords", ".tar",
// ".tar.gz" or ".tgz".
var shardNameRE = regexp.MustCompile(`^(.+)-(\d{5,})-of-(\d{5,})(\.tfrecords?|\.tar|\.tar\.gz|\.tgz)?$`)

// seqNameRE matches shard names as WebDataset's tools write them, a
// sequence number and no count ("train-000123.tar", and
// "imagenet-val-000007.tar" as the brace notation
// "imagenet-val-{000000..000049}.tar" expands), where the word before the
// number names a split: names such as "shard-000000.tar" carry none.
var seqNameRE = regexp.MustCompile(`^(?:.*[-_.])?(train|val|validation|test)[-_](\d+)(\.tfrecords?|\.tar|\.tar\.gz|\.tgz)$`)

// splitOf returns the split a shard file name carries, or "".
func splitOf(name string) string {
	if m := shardNameRE.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	if m := seqNameRE.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}

// splitAliases are the names a split goes by: --split val finds
// TensorFlow's "validation-*" shards, and --split validation finds "val-*".
var splitAliases = map[string][]string{"val": {"validation"}, "validation": {"val"}}

// sideFile reports whether name is a file that lives beside shards
// without being one: an index, the manifest, the record-count cache, the
// pack lock. A glob that matches them (train-* matching train-00000.idx)
// does not read them as data, unless their bytes say they are a format.
func sideFile(name string) bool {
	base := filepath.Base(name)
	return strings.HasSuffix(base, ".idx") || base == ManifestName || base == CountsName || base == LockName
}

// headFormat is the format a data file's first bytes say, else its name
// (a shard damaged at offset 0); nil when neither says: an empty file, of
// any format its fellows have, or a file of damaged first bytes whose
// name says no format either. Open and Verify tell formats by it.
func headFormat(p string, head []byte) *containerFormat {
	if f := matchHead(head); f != nil || len(head) == 0 {
		return f
	}
	return matchExt(p)
}

// openFiles opens local files (from a glob, a file path, or several paths
// given as one dataset) as one dataset: each file's format is told by its
// bytes through the registry, files beside the shards (indexes, manifest)
// are left out, and every file must be of the same format.
func openFiles(ctx context.Context, files []string, o OpenOptions) (source.Dataset, error) {
	var kept []string
	var format *containerFormat
	var firstOf string // the file that decided format
	var unsure []string
	seen := map[string]bool{}
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if seen[filepath.Clean(p)] {
			continue
		}
		seen[filepath.Clean(p)] = true
		head, err := readHead(p)
		if err != nil {
			return nil, err
		}
		if matchHead(head) == nil && sideFile(p) {
			continue // an index or the manifest beside the shards
		}
		kept = append(kept, p)
		f := headFormat(p, head)
		if f == nil {
			if len(head) > 0 {
				// Damage at offset 0 of a named shard is its reader's
				// to report, with the offset; an unnamed file is no shard.
				unsure = append(unsure, p)
			}
			continue // an empty shard: of any format the others have
		}
		if format == nil {
			format, firstOf = f, p
		} else if f != format {
			return nil, fmt.Errorf("%s is a %s file, %s a %s file: two formats in one dataset, which reads one (the files of one dataset must be of one format; give one format's files as paths)", firstOf, format.name, p, f.name)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%s: only indexes and metadata (.idx, %s), no shards", files[0], ManifestName)
	}
	if format == nil {
		// Empty files, or files named as shards whose first bytes are
		// damaged: TFRecord's (the format named without an extension),
		// whose reader reports the damage at its offset.
		format = formatByName("tfrecord")
	}
	for _, p := range unsure {
		// A file named as a shard (train-00003-of-01024) whose first bytes
		// are damaged is a damaged shard of its fellows' format; anything
		// else is not a shard at all.
		if splitOf(filepath.Base(p)) == "" {
			return nil, fmt.Errorf("%s: not a dataset file: its first bytes match no format read here (TFRecord, tar, gzip, LMDB)", p)
		}
	}
	if err := checkMerged(kept, o.Split); err != nil {
		return nil, err // a split packed as tasks: its shards are read once merged
	}
	return format.open(ctx, kept, o)
}

// expandPaths turns paths (files or globs) into the files of one dataset:
// each glob's matches in order (but directories), each file as given. A
// directory or URL cannot be one of several paths.
func expandPaths(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		if isGlob(p) {
			m, err := filepath.Glob(p)
			if err != nil || len(m) == 0 {
				return nil, fmt.Errorf("%s: no files match", p)
			}
			n := len(files)
			for _, f := range m {
				if st, err := os.Stat(f); err != nil || !st.IsDir() { // a glob's directories hold no records
					files = append(files, f)
				}
			}
			if len(files) == n {
				return nil, fmt.Errorf("%s: only directories match", p)
			}
			continue
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return nil, fmt.Errorf("%s: a directory: several paths are the files of one dataset (shards); give a directory alone", p)
		}
		files = append(files, p)
	}
	return files, nil
}

func isGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

// DataFiles lists the shard files of a directory without a manifest, for
// the commands that check every file (verify, inspect): its TFRecord,
// tar and gzip (.tar.gz) files told by their bytes (TensorFlow's train-00000-of-01024 has no
// extension), and the files whose names say so (a .tfrecord, a .tar, or a
// <split>-NNNNN-of-NNNNN name) even when their first bytes are damaged,
// or cannot be read, so that the damage is reported; sorted. Indexes, the manifest,
// subdirectories and hidden files are left out.
func DataFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(dir, name)
		// A file that cannot be read (a FIFO named x.tfrecord) is listed
		// by its name, for the command to report.
		head, _ := readHead(p)
		f := matchHead(head)
		if f == nil && sideFile(name) {
			continue
		}
		if f == nil {
			f = matchExt(name)
		}
		if f == nil && splitOf(name) != "" {
			f = formatByName("tfrecord")
		}
		if f != nil && (f.name == "tfrecord" || f.name == "tar" || f.name == "gzip") {
			files = append(files, p)
		}
	}
	return files, nil
}
