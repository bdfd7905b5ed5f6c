package source

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// WebDataset tar shards: each sample is a run of consecutive tar members
// sharing a key, the member name up to the first dot of its base name
// ("cls/x.jpg" and "cls/x.cls" are sample "cls/x" with members "jpg" and
// "cls"), webdataset's convention. The image is the first member whose
// extension is an image extension (jpg, jpeg, png, ...); the label comes
// from a "cls" member (decimal text) or a "json" member's "label" field.
// A "json" member may also carry "filename", which becomes the item key
// (else the key is the image member's name).
//
// DALI's wds2idx index ("<tar base up to its first dot>.idx": a line
// "v1.2 <samples>", then per sample "ext offset size name" for each member,
// offset the byte offset of the member's data) is used when present;
// otherwise the tar headers are scanned at open.

// wdsMember locates one member's data in its tar file.
type wdsMember struct {
	ext       string
	off, size int64
}

type wdsSample struct {
	file    int
	key     string // webdataset key
	hdrOff  int64  // offset of the sample's first header (or first data, from an index)
	members []wdsMember
	img     int    // index into members, -1 if none
	badLbl  string // why its label is unusable (Load reports it), "" if fine
}

// Damage is a record or region of a container file that could not be
// read: the file, the byte offset (-1 when the format names records by
// key), the record's key when it has one, and why.
type Damage struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
	Key    string `json:"key,omitempty"`
	Reason string `json:"reason"`
}

// WDS is a set of WebDataset tar shards as an indexed source. Load is safe
// for concurrent use (it reads with ReadAt).
type WDS struct {
	files   []string
	samples []wdsSample
	items   []Item
	classes []string
	damage  []Damage
	mu      sync.Mutex
	open    []*os.File
}

// IsTar reports whether name has a tar extension.
func IsTar(name string) bool { return strings.HasSuffix(name, ".tar") }

// WDSIndexName returns the DALI wds2idx index path of a tar file: the
// path up to the first dot of the base name, plus ".idx".
func WDSIndexName(tarPath string) string {
	dir, base := filepath.Split(tarPath)
	if i := strings.IndexByte(base[min(1, len(base)):], '.'); i >= 0 {
		base = base[:i+min(1, len(base))]
	}
	return dir + base + ".idx"
}

// wdsSplit splits a member name into the sample key and the extension:
// "a/b.c.jpg" → "a/b", "c.jpg".
func wdsSplit(name string) (key, ext string) {
	slash := strings.LastIndexByte(name, '/') + 1
	dot := strings.IndexByte(name[slash:], '.')
	if dot < 0 {
		return name, ""
	}
	return name[:slash+dot], name[slash+dot+1:]
}

func wdsIsImageExt(ext string) bool {
	e := ext
	if i := strings.LastIndexByte(e, '.'); i >= 0 {
		e = e[i+1:]
	}
	return IsImageName("x." + e)
}

// OpenWDS lists the samples of the given tar shards, in file order then
// tar order. Damaged regions (a bad header, a member cut short) are
// skipped and reported by Damage; they lose the samples they hold.
func OpenWDS(files []string) (*WDS, error) {
	if len(files) == 0 {
		return nil, errors.New("webdataset: no tar files")
	}
	d := &WDS{files: files, open: make([]*os.File, len(files))}
	for fi, f := range files {
		tf, size, err := OpenFile(f)
		if err != nil {
			d.Close()
			return nil, err
		}
		tf.Close()
		if _, e := os.Stat(WDSIndexName(f)); e == nil {
			err = d.listIndexed(fi, size)
		} else {
			err = d.listTar(fi)
		}
		if err != nil {
			d.Close()
			return nil, err
		}
	}
	maxLabel := 0
	for i := range d.samples {
		it, err := d.describe(&d.samples[i])
		if err != nil {
			d.Close()
			return nil, err
		}
		if it.Label <= MaxLabel { // else Load reports it
			maxLabel = max(maxLabel, it.Label)
		}
		d.items = append(d.items, it)
	}
	if len(d.samples) == 0 && len(d.damage) == 0 {
		d.Close()
		return nil, fmt.Errorf("%s: no webdataset samples", files[0])
	}
	d.classes = lmdbClasses(maxLabel)
	return d, nil
}

// listTar scans a tar file's headers.
func (d *WDS) listTar(fi int) error {
	f, size, err := OpenFile(d.files[fi])
	if err != nil {
		return err
	}
	defer f.Close()
	var start int64
	for start < size {
		next, dmg := d.scanFrom(fi, f, start, size)
		if dmg == nil {
			return nil
		}
		d.damage = append(d.damage, *dmg)
		// Resynchronise: the next 512-byte block that is a valid header.
		start = -1
		for off := next; off+512 <= size; off += 512 {
			if validTarHeader(f, off) {
				start = off
				break
			}
		}
		if start < 0 {
			return nil
		}
	}
	return nil
}

// scanFrom reads tar members from offset start. It returns nil damage at a
// clean end, else the damage and the block offset to resume the search
// for a header at.
func (d *WDS) scanFrom(fi int, f *os.File, start, size int64) (int64, *Damage) {
	name := d.files[fi]
	cr := &offsetReader{r: io.NewSectionReader(f, start, size-start), start: start, off: start}
	tr := tar.NewReader(cr)
	var cur *wdsSample
	flush := func() {
		if cur != nil {
			d.samples = append(d.samples, *cur)
			cur = nil
		}
	}
	nextHdr := start
	for {
		hdrOff := nextHdr // archive/tar skips the previous member's data in Next
		h, err := tr.Next()
		if err == io.EOF {
			flush()
			return 0, nil
		}
		if err != nil {
			flush()
			reason := err.Error()
			if errors.Is(err, io.ErrUnexpectedEOF) {
				reason = "truncated tar header"
			}
			return hdrOff + 512, &Damage{Path: name, Offset: hdrOff, Reason: reason}
		}
		dataOff := cr.off
		nextHdr = dataOff + (h.Size+511)/512*512
		if dataOff+h.Size > size {
			flush()
			return size, &Damage{Path: name, Offset: hdrOff, Reason: fmt.Sprintf("member %q: %d data bytes, %d present (truncated)", h.Name, h.Size, size-dataOff)}
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		key, ext := wdsSplit(h.Name)
		if key == "" || strings.HasSuffix(key, "/") {
			continue // hidden files, as DALI skips them
		}
		if cur == nil || cur.key != key {
			flush()
			cur = &wdsSample{file: fi, key: key, hdrOff: hdrOff, img: -1}
		}
		cur.members = append(cur.members, wdsMember{ext: ext, off: dataOff, size: h.Size})
	}
}

// validTarHeader reports whether the 512-byte block at off is a tar header
// with a correct checksum.
func validTarHeader(f *os.File, off int64) bool {
	var b [512]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return false
	}
	if string(b[257:262]) != "ustar" {
		return false
	}
	want, err := strconv.ParseInt(strings.Trim(string(b[148:156]), " \x00"), 8, 64)
	if err != nil {
		return false
	}
	var sum int64
	for i, c := range b {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	return sum == want
}

// offsetReader counts the bytes read so far, as a file offset. archive/tar
// reads headers with exact-size reads, so after Next the offset is the
// member's data offset.
type offsetReader struct {
	r     *io.SectionReader
	start int64
	off   int64
}

func (o *offsetReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	o.off += int64(n)
	return n, err
}

func (o *offsetReader) Seek(offset int64, whence int) (int64, error) {
	n, err := o.r.Seek(offset, whence)
	if err == nil {
		o.off = o.start + n
	}
	return n, err
}

// listIndexed reads a DALI wds2idx index of tar file fi, size bytes long.
func (d *WDS) listIndexed(fi int, size int64) error {
	ip := WDSIndexName(d.files[fi])
	f, _, err := OpenFile(ip)
	if err != nil {
		return err
	}
	defer f.Close()
	samples, err := readWDSIndex(f, ip, d.files[fi], size)
	if err != nil {
		return err
	}
	for _, s := range samples {
		s.file = fi
		d.samples = append(d.samples, s)
	}
	return nil
}

// readWDSIndex parses a DALI wds2idx index (version v1.2 or v1.1:
// "ext offset size name" per member; v1.0: "ext offset size") of the tar
// file tarName, tarSize bytes long. Every member must lie inside the tar,
// after the member before it, and the sample
// count must be the header's: else the index is stale (written for
// another version of the tar), a *CorruptError naming the index line.
func readWDSIndex(r io.Reader, name, tarName string, tarSize int64) ([]wdsSample, error) {
	br := bufio.NewReader(r)
	var out []wdsSample
	var off int64
	line := 0
	bad := func(lineOff int64, format string, a ...any) error {
		return &CorruptError{Path: name, Offset: lineOff, Reason: fmt.Sprintf("index line %d: %s", line, fmt.Sprintf(format, a...))}
	}
	per := 4
	want := -1
	var next int64 // members do not overlap
	for {
		s, err := br.ReadString('\n')
		if err == io.EOF && s == "" {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		lineOff := off
		off += int64(len(s))
		line++
		f := strings.Fields(s)
		if line == 1 {
			if len(f) != 2 || !strings.HasPrefix(f[0], "v1.") {
				return nil, bad(lineOff, "want \"v1.2 <samples>\", got %q", shorten(strings.TrimSpace(s)))
			}
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 0 {
				return nil, bad(lineOff, "bad sample count %q", shorten(f[1]))
			}
			want = n
			if f[0] == "v1.0" {
				per = 3
			}
			continue
		}
		if len(f) == 0 {
			continue
		}
		if len(f)%per != 0 {
			return nil, bad(lineOff, "%d fields, want groups of %d", len(f), per)
		}
		if len(out) == want {
			return nil, bad(lineOff, "stale index: more samples than the %d it lists for %s", want, tarName)
		}
		smp := wdsSample{img: -1, hdrOff: -1}
		for j := 0; j < len(f); j += per {
			o, e1 := strconv.ParseInt(f[j+1], 10, 64)
			sz, e2 := strconv.ParseInt(f[j+2], 10, 64)
			if e1 != nil || e2 != nil || o < 0 || sz < 0 {
				return nil, bad(lineOff, "bad numbers %q %q", shorten(f[j+1]), shorten(f[j+2]))
			}
			if o < next || sz > tarSize || o > tarSize-sz {
				return nil, bad(lineOff, "stale index: member %q at offset %d (%d bytes) does not fit %s (%d bytes; the member before it ends at %d)", shorten(f[j]), o, sz, tarName, tarSize, next)
			}
			next = o + sz
			m := wdsMember{ext: f[j], off: o, size: sz}
			if per == 4 && smp.key == "" {
				smp.key, _ = wdsSplit(f[j+3])
			}
			if smp.hdrOff < 0 {
				smp.hdrOff = max(o-512, 0)
			}
			smp.members = append(smp.members, m)
		}
		out = append(out, smp)
	}
	if line == 0 {
		return nil, bad(0, "empty index")
	}
	if len(out) != want {
		return nil, bad(off, "stale index: %d samples, its header says %d, for %s", len(out), want, tarName)
	}
	return out, nil
}

// shorten cuts s for an error message.
func shorten(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}

// WriteWDSIndex writes a DALI wds2idx v1.2 index of the given samples.
func WriteWDSIndex(w io.Writer, samples []WDSIndexSample) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "v1.2 %d\n", len(samples))
	for _, s := range samples {
		for j, m := range s.Members {
			if j > 0 {
				bw.WriteByte(' ')
			}
			fmt.Fprintf(bw, "%s %d %d %s", m.Ext, m.Offset, m.Size, m.Name)
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// WDSIndexSample is one index line: the members of a sample.
type WDSIndexSample struct {
	Members []WDSIndexMember
}

// WDSIndexMember locates one tar member's data.
type WDSIndexMember struct {
	Ext          string
	Offset, Size int64
	Name         string
}

// describe picks a sample's image member and reads its label and key.
func (d *WDS) describe(s *wdsSample) (Item, error) {
	it := Item{Key: s.key}
	var label *int
	filename := ""
	for j, m := range s.members {
		last := m.ext[strings.LastIndexByte(m.ext, '.')+1:]
		switch {
		case s.img < 0 && wdsIsImageExt(m.ext):
			s.img = j
			it.Key = s.key + "." + m.ext
			it.Size = m.size
		case last == "cls" && label == nil && m.size < 64:
			b, err := d.readMember(s.file, m)
			if err != nil {
				return it, err
			}
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				label = &v
			} else {
				s.badLbl = fmt.Sprintf("member %s: label %q is not an integer", m.ext, shorten(strings.TrimSpace(string(b))))
			}
		case last == "json" && m.size < 1<<20:
			b, err := d.readMember(s.file, m)
			if err != nil {
				return it, err
			}
			var meta struct {
				Label    *int   `json:"label"`
				Filename string `json:"filename"`
			}
			if err := json.Unmarshal(b, &meta); err == nil {
				if label == nil && meta.Label != nil {
					label = meta.Label
				}
				filename = meta.Filename
			} else if label == nil {
				s.badLbl = fmt.Sprintf("member %s: %v", m.ext, err)
			}
		}
	}
	if label != nil {
		it.Label = max(*label, 0)
		if *label < 0 {
			s.badLbl = fmt.Sprintf("negative label %d", *label)
		} else {
			s.badLbl = "" // a good label in another member
		}
	}
	if filename != "" {
		it.Key = filename
	}
	return it, nil
}

func (d *WDS) file(i int) (*os.File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.open[i] == nil {
		f, _, err := OpenFile(d.files[i])
		if err != nil {
			return nil, err
		}
		d.open[i] = f
	}
	return d.open[i], nil
}

func (d *WDS) readMember(fi int, m wdsMember) ([]byte, error) {
	f, err := d.file(fi)
	if err != nil {
		return nil, err
	}
	if m.size > MaxFileSize {
		return nil, &CorruptError{Path: d.files[fi], Offset: m.off, Reason: fmt.Sprintf("member %s: %d bytes, above the %d-byte cap on one sample", m.ext, m.size, MaxFileSize)}
	}
	b := make([]byte, m.size)
	n, err := f.ReadAt(b, m.off)
	if n == len(b) {
		return b, nil
	}
	if err == io.EOF {
		return nil, &CorruptError{Path: d.files[fi], Offset: m.off, Reason: fmt.Sprintf("member %s: %d of %d bytes present (truncated)", m.ext, n, m.size), Err: io.ErrUnexpectedEOF}
	}
	return nil, fmt.Errorf("%s: offset %d: %w", d.files[fi], m.off, err)
}

// Close closes the tar files.
func (d *WDS) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first error
	for i, f := range d.open {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
			d.open[i] = nil
		}
	}
	return first
}

// Kind returns "wds".
func (d *WDS) Kind() string { return "wds" }

// Classes names labels 0 … max by their numbers.
func (d *WDS) Classes() []string { return d.classes }

// Items returns the samples, file by file in tar order.
func (d *WDS) Items() []Item { return d.items }

// Files returns the tar files.
func (d *WDS) Files() []string { return d.files }

// Damage returns the regions that could not be read at open.
func (d *WDS) Damage() []Damage { return d.damage }

// Where returns the file and byte offset of sample i (its first header, or
// its first member's data when listed from an index).
func (d *WDS) Where(i int) (string, int64) {
	s := &d.samples[i]
	return d.files[s.file], s.hdrOff
}

// Load reads sample i's image member.
func (d *WDS) Load(i int) (Sample, error) {
	s := &d.samples[i]
	it := d.items[i]
	if s.img < 0 {
		return Sample{Item: it}, &CorruptError{Path: d.files[s.file], Key: s.key, Offset: s.hdrOff, Reason: "sample has no image member"}
	}
	if it.Label > MaxLabel {
		return Sample{Item: it}, labelError(d.files[s.file], s.key, s.hdrOff, it.Label)
	}
	if s.badLbl != "" {
		return Sample{Item: it}, &CorruptError{Path: d.files[s.file], Key: s.key, Offset: s.hdrOff, Reason: s.badLbl}
	}
	data, err := d.readMember(s.file, s.members[s.img])
	if err != nil {
		return Sample{Item: it}, err
	}
	smp := Sample{Item: it, Data: data, Format: Sniff(data)}
	if smp.Format == "" {
		return smp, &CorruptError{Path: d.files[s.file], Key: s.key, Offset: s.members[s.img].off, Reason: fmt.Sprintf("member %s: not an image", s.members[s.img].ext), Err: ErrNotImage}
	}
	return smp, nil
}

// sortedTars returns the *.tar files of dir, sorted.
func sortedTars(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.tar"))
	slices.Sort(m)
	return m
}

// WDSFiles returns the tar files a path names: a tar file, or a directory
// of them.
func WDSFiles(p string) []string {
	if IsTar(p) {
		return []string{p}
	}
	return sortedTars(p)
}

// Members returns the member extensions of sample i.
func (d *WDS) Members(i int) []string {
	var out []string
	for _, m := range d.samples[i].members {
		out = append(out, m.ext)
	}
	return out
}
