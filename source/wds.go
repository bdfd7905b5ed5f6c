package source

import (
	"archive/tar"
	"bufio"
	"bytes"
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
// Extensions are lower-cased, as webdataset does ("x.JPG" and "x.CLS" are
// members "jpg" and "cls" of sample "x"). A sample without a label member
// is damaged (it is never served as class 0 for lack of its label), unless
// WDSOptions.Unlabeled says the data has no labels.
//
// DALI's wds2idx index ("<tar base up to its first dot>.idx": a line
// "v1.2 <samples>", then per sample "ext offset size name" for each member,
// offset the byte offset of the member's data; the legacy "v1.1" (and
// "v1.0") lines are "ext offset size" triples, without names) is used when
// present; otherwise the tar headers are scanned at open. An index is not
// trusted: each member it lists is checked against its tar header, the
// 512 bytes before its offset, which must be a regular file's header with
// the member's size (and name), at open and again as the member is read.
// An index that fails (DALI's wds2idx writes offsets that point into GNU
// long-name or PAX headers for some tars) is an index fault naming the
// index file and line (IndexFaults), and the tar is scanned instead.

// wdsMember locates one member's data in its tar file.
type wdsMember struct {
	ext       string // lower-cased
	name      string // the member's name; "" when a v1.1 index lists it
	off, size int64
}

type wdsSample struct {
	file    int
	key     string // webdataset key
	hdrOff  int64  // offset of the sample's first header
	line    int    // the index line that listed it; 0 when scanned
	members []wdsMember
	img     int    // index into members, -1 if none
	badLbl  string // why its label is unusable (Load reports it), "" if fine
	noLabel bool   // it has no label member at all
}

// WDSOptions configure OpenWDSWith. The zero value reads labeled data.
type WDSOptions struct {
	// Unlabeled reads data that has no labels: a sample without a label
	// member is served as label 0 instead of being damaged.
	Unlabeled bool
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

// String is "path: offset N: reason" (key K in place of the offset when
// there is none): how a command lists damage for a person.
func (d Damage) String() string {
	switch {
	case d.Offset >= 0:
		return fmt.Sprintf("%s: offset %d: %s", d.Path, d.Offset, d.Reason)
	case d.Key != "":
		return fmt.Sprintf("%s: key %s: %s", d.Path, d.Key, d.Reason)
	}
	return fmt.Sprintf("%s: %s", d.Path, d.Reason)
}

// WDS is a set of WebDataset tar shards as an indexed source. Load is safe
// for concurrent use (it reads with ReadAt).
type WDS struct {
	files   []string
	opts    WDSOptions
	samples []wdsSample
	items   []Item
	classes []string
	damage  []Damage
	faults  []Damage // indexes found wrong; their tars were scanned
	mu      sync.Mutex
	open    []*os.File
}

// IsTar reports whether name has a tar extension: .tar, or .tar.gz and
// .tgz (gzip-compressed, read in order: see OpenTarGz).
func IsTar(name string) bool {
	return strings.HasSuffix(name, ".tar") || IsTarGz(name)
}

// IsTarGz reports whether name has a gzip-compressed tar's extension
// (.tar.gz or .tgz).
func IsTarGz(name string) bool {
	return strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tgz")
}

// WDSIndexName returns the DALI wds2idx index path of a tar file: the
// path up to the first dot of the base name, plus ".idx".
func WDSIndexName(tarPath string) string {
	dir, base := filepath.Split(tarPath)
	if i := strings.IndexByte(base[min(1, len(base)):], '.'); i >= 0 {
		base = base[:i+min(1, len(base))]
	}
	return dir + base + ".idx"
}

// wdsSplit splits a member name into the sample key and the extension,
// lower-cased as webdataset does: "a/b.c.JPG" → "a/b", "c.jpg".
func wdsSplit(name string) (key, ext string) {
	slash := strings.LastIndexByte(name, '/') + 1
	dot := strings.IndexByte(name[slash:], '.')
	if dot < 0 {
		return name, ""
	}
	return name[:slash+dot], strings.ToLower(name[slash+dot+1:])
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
// skipped and reported by Damage; they lose the samples they hold. An
// index that disagrees with its tar is reported by IndexFaults, and the
// tar is scanned instead.
func OpenWDS(files []string) (*WDS, error) { return OpenWDSWith(files, WDSOptions{}) }

// OpenWDSWith is OpenWDS with options.
func OpenWDSWith(files []string, o WDSOptions) (*WDS, error) {
	if len(files) == 0 {
		return nil, errors.New("webdataset: no tar files")
	}
	d := &WDS{files: files, opts: o, open: make([]*os.File, len(files))}
	for fi, f := range files {
		tf, size, err := OpenFile(f)
		if err != nil {
			d.Close()
			return nil, err
		}
		var magic [2]byte
		n, _ := tf.ReadAt(magic[:], 0)
		tf.Close()
		if n == 2 && magic == [2]byte{0x1f, 0x8b} {
			d.Close()
			return nil, fmt.Errorf("%s: gzip-compressed (its first bytes are 1f 8b): a .tar.gz is read in order (OpenTarGz, shard.Open), not by position; decompress it (gunzip) for random access", f)
		}
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
	if !o.Unlabeled && d.folderLabels() {
		return d, nil // a tar of an ImageFolder: its folders are its classes
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
		cur.members = append(cur.members, wdsMember{ext: ext, name: h.Name, off: dataOff, size: h.Size})
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

// listIndexed lists tar file fi, size bytes long, from its DALI wds2idx
// index, checking every member the index lists against its tar header. An
// index that cannot be read as one, or that disagrees with the tar, is an
// index fault (IndexFaults), and the tar is scanned instead.
func (d *WDS) listIndexed(fi int, size int64) error {
	ip := WDSIndexName(d.files[fi])
	f, _, err := OpenFile(ip)
	if err != nil {
		return err
	}
	samples, err := readWDSIndex(f, ip, d.files[fi], size)
	f.Close()
	cut := false
	if err == nil {
		cut, err = d.checkIndexed(fi, ip, samples)
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		d.faults = append(d.faults, Damage{Path: ce.Path, Offset: ce.Offset, Reason: ce.Reason})
		return d.listTar(fi)
	}
	if err != nil {
		return err
	}
	if cut {
		// A v1.1 index names no member, and a long name is cut in its
		// header: the names are read by scanning.
		return d.listTar(fi)
	}
	for _, s := range samples {
		s.file = fi
		d.samples = append(d.samples, s)
	}
	return nil
}

// checkIndexed checks each member an index lists against its tar header
// (see memberHeaderFault), and takes the names a v1.1 index leaves out
// from the headers; cut reports a name cut short in its header (a long
// name lives in the GNU or PAX header before it).
func (d *WDS) checkIndexed(fi int, ip string, samples []wdsSample) (cut bool, _ error) {
	f, err := d.file(fi)
	if err != nil {
		return false, err
	}
	var hdr [512]byte
	for si := range samples {
		s := &samples[si]
		for mi := range s.members {
			m := &s.members[mi]
			if _, err := f.ReadAt(hdr[:], m.off-512); err != nil {
				return false, fmt.Errorf("%s: offset %d: %w", d.files[fi], m.off-512, err)
			}
			name, why := memberHeaderFault(hdr[:], *m)
			if why != "" {
				return false, indexFault(ip, s.line, d.files[fi], *m, why)
			}
			if m.name == "" {
				m.name = name
				cut = cut || hdr[99] != 0
			}
		}
		if s.key == "" && len(s.members) > 0 {
			s.key, _ = wdsSplit(s.members[0].name)
		}
	}
	return cut, nil
}

// indexFault is the error of an index line whose member m is not where
// the line says.
func indexFault(ip string, line int, tarName string, m wdsMember, why string) error {
	return &CorruptError{Path: ip, Offset: -1, Reason: fmt.Sprintf("index line %d: wrong index: member %s at offset %d (%d bytes): the 512 bytes before it in %s are %s", line, m.ext, m.off, m.size, tarName, why)}
}

// memberHeaderFault checks that hdr, the 512 bytes before a member's data
// in its tar, is that member's header: a valid checksum, a regular file,
// the member's size, and its name (the index's, else its extension; a
// name cut to the header's 100 bytes, as GNU and PAX tars leave it beside
// a long name, must start the index's).
// It returns the header's name and "" when it is, else what the bytes
// are instead.
func memberHeaderFault(hdr []byte, m wdsMember) (name, why string) {
	if !tarChecksumOK(hdr) {
		return "", "not a tar header (checksum mismatch)"
	}
	name = cString(hdr[0:100])
	truncated := hdr[99] != 0
	if string(hdr[257:262]) == "ustar" && hdr[345] != 0 && string(hdr[257:263]) == "ustar\x00" {
		name = cString(hdr[345:500]) + "/" + name // POSIX ustar's prefix
	}
	switch t := hdr[156]; t {
	case '0', 0, '7':
	case 'L', 'K':
		return name, fmt.Sprintf("a GNU long-name header (%q), not the member's own: the offset points into the long name (as DALI's wds2idx writes for GNU long-name members)", name)
	case 'x', 'g':
		return name, fmt.Sprintf("a PAX extended header (%q), not the member's own: the offset points into PAX records (as DALI's wds2idx writes beside PAX headers)", name)
	default:
		return name, fmt.Sprintf("the header of %q, type %q, not a regular file's", name, t)
	}
	size, ok := tarNumber(hdr[124:136])
	if !ok || size != m.size {
		return name, fmt.Sprintf("the header of %q, %d bytes, not the %d the index says", name, size, m.size)
	}
	// The name, where the index gives it (GNU tar's listing, which
	// wds2idx reads, writes some bytes as backslash escapes: then the
	// extension; a name that is not ASCII lives in a PAX record before
	// the header, which holds a stand-in: Go's archive/tar drops the other
	// bytes, Python's tarfile writes '?' for them), else the extension.
	_, ext := wdsSplit(name)
	switch {
	case m.name != "" && !isASCII(m.name):
	case m.name != "" && truncated:
		if !strings.HasPrefix(m.name, name) && !strings.Contains(m.name, "\\") {
			return name, fmt.Sprintf("the header of %q, not of %q", name, m.name)
		}
	case m.name != "" && !strings.Contains(m.name, "\\"):
		if name != m.name {
			return name, fmt.Sprintf("the header of %q, not of %q", name, m.name)
		}
	case !truncated && ext != m.ext:
		return name, fmt.Sprintf("the header of %q, not of a %q member", name, m.ext)
	}
	return name, ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// tarChecksumOK checks a 512-byte tar header's checksum field (octal,
// ended by NUL or space) against the unsigned and the signed sums of the
// header (historic tars wrote either). An all-zero block fails.
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
	for i, b := range h[:512] {
		if i >= 148 && i < 156 {
			b = ' '
		}
		unsigned += int64(b)
		signed += int64(int8(b))
	}
	return want == unsigned || want == signed
}

// tarNumber parses a tar numeric field: octal text, or GNU's base-256
// (the high bit of the first byte set).
func tarNumber(b []byte) (int64, bool) {
	if len(b) > 0 && b[0]&0x80 != 0 {
		if b[0]&0x40 != 0 || len(b) > 9 && b[0]&0x7f != 0 {
			return 0, false // negative, or above int64
		}
		var v int64
		for i, c := range b {
			if i == 0 {
				c &= 0x7f
			}
			if v > (1<<55)-1 {
				return 0, false
			}
			v = v<<8 | int64(c)
		}
		return v, true
	}
	f := strings.TrimRight(strings.TrimLeft(string(b), " "), " \x00")
	if f == "" {
		return 0, true
	}
	v, err := strconv.ParseInt(f, 8, 64)
	return v, err == nil && v >= 0
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// readWDSIndex parses a DALI wds2idx index of the tar file tarName,
// tarSize bytes long: version v1.2 lists "ext offset size name" per
// member, the legacy v1.1 and v1.0 "ext offset size". Every member must
// lie inside the tar, after the member before it, at a 512-byte block
// (a tar member's data starts there), and the sample count must be the
// header's: else the index is stale or wrong (written for another version
// of the tar, or by a tool that miscounted), a *CorruptError naming the
// index line.
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
			if f[0] != "v1.2" {
				per = 3 // DALI's legacy formats: no names
			}
			continue
		}
		if len(f) == 0 {
			continue
		}
		if len(f)%per != 0 {
			return nil, bad(lineOff, "%d fields, want groups of %d (ext offset size%s)", len(f), per, map[bool]string{true: " name"}[per == 4])
		}
		if len(out) == want {
			return nil, bad(lineOff, "stale index: more samples than the %d it lists for %s", want, tarName)
		}
		smp := wdsSample{img: -1, hdrOff: -1, line: line}
		for j := 0; j < len(f); j += per {
			o, e1 := strconv.ParseInt(f[j+1], 10, 64)
			sz, e2 := strconv.ParseInt(f[j+2], 10, 64)
			if e1 != nil || e2 != nil || o < 0 || sz < 0 {
				return nil, bad(lineOff, "bad numbers %q %q", shorten(f[j+1]), shorten(f[j+2]))
			}
			if o < next || o < 512 || sz > tarSize || o > tarSize-sz {
				return nil, bad(lineOff, "stale index: member %q at offset %d (%d bytes) does not fit %s (%d bytes; the member before it ends at %d)", shorten(f[j]), o, sz, tarName, tarSize, next)
			}
			if o%512 != 0 {
				return nil, bad(lineOff, "wrong index: member %q at offset %d, not at a 512-byte block where tar member data starts", shorten(f[j]), o)
			}
			next = o + sz
			m := wdsMember{ext: strings.ToLower(f[j]), off: o, size: sz}
			if per == 4 {
				m.name = f[j+3]
				if smp.key == "" {
					smp.key, _ = wdsSplit(m.name)
				}
			}
			if smp.hdrOff < 0 {
				smp.hdrOff = o - 512
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
	var lbl wdsLabel
	var exts []string
	for j, m := range s.members {
		exts = append(exts, m.ext)
		last := m.ext[strings.LastIndexByte(m.ext, '.')+1:]
		switch {
		case s.img < 0 && wdsIsImageExt(m.ext):
			s.img = j
			it.Key = s.key + "." + m.ext
			it.Size = m.size
		case last == "cls" && lbl.label == nil && m.size < 64, last == "json" && m.size < 1<<20:
			b, err := d.readMember(s.file, m)
			if err != nil {
				return it, err
			}
			lbl.add(last, b)
		}
	}
	label, filename, why := lbl.result(d.opts.Unlabeled, exts)
	it.Label, s.badLbl = label, why
	s.noLabel = lbl.label == nil && lbl.bad == ""
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

// readIndexed reads member m of sample s, which an index listed, with its
// header in the same read, and checks that the header is m's: a tar
// changed after the index was checked at open is a wrong index, named
// by its file and line, never a member that is "not an image".
func (d *WDS) readIndexed(s *wdsSample, m wdsMember) ([]byte, error) {
	f, err := d.file(s.file)
	if err != nil {
		return nil, err
	}
	if m.size > MaxFileSize {
		return nil, &CorruptError{Path: d.files[s.file], Offset: m.off, Reason: fmt.Sprintf("member %s: %d bytes, above the %d-byte cap on one sample", m.ext, m.size, MaxFileSize)}
	}
	b := make([]byte, 512+m.size)
	n, err := f.ReadAt(b, m.off-512)
	if n < 512 || n < len(b) && err != io.EOF {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%s: offset %d: %w", d.files[s.file], m.off-512, err)
	}
	if _, why := memberHeaderFault(b[:512], m); why != "" {
		return nil, indexFault(WDSIndexName(d.files[s.file]), s.line, d.files[s.file], m, why)
	}
	if n < len(b) {
		return nil, &CorruptError{Path: d.files[s.file], Offset: m.off, Reason: fmt.Sprintf("member %s: %d of %d bytes present (truncated)", m.ext, n-512, m.size), Err: io.ErrUnexpectedEOF}
	}
	return b[512:], nil
}

// IndexFaults returns the indexes found wrong at open, each naming the
// index file and line (Offset -1); their tars were scanned instead.
func (d *WDS) IndexFaults() []Damage { return d.faults }

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

// Where returns the file and byte offset of sample i: its first header
// (listed from an index, its first member's own header, after any
// long-name or PAX headers).
func (d *WDS) Where(i int) (string, int64) {
	s := &d.samples[i]
	return d.files[s.file], s.hdrOff
}

// Load reads sample i's image member.
func (d *WDS) Load(i int) (Sample, error) {
	s := &d.samples[i]
	it := d.items[i]
	if s.img < 0 {
		return Sample{Item: it}, &CorruptError{Path: d.files[s.file], Key: s.key, Offset: s.hdrOff, Reason: "sample has no image member", Err: ErrNoImageMember}
	}
	if it.Label > MaxLabel {
		return Sample{Item: it}, labelError(d.files[s.file], s.key, s.hdrOff, it.Label)
	}
	if s.badLbl != "" {
		var cause error
		if s.noLabel {
			cause = ErrNoLabel
		}
		return Sample{Item: it}, &CorruptError{Path: d.files[s.file], Key: s.key, Offset: s.hdrOff, Reason: s.badLbl, Err: cause}
	}
	var data []byte
	var err error
	if s.line > 0 {
		data, err = d.readIndexed(s, s.members[s.img])
	} else {
		data, err = d.readMember(s.file, s.members[s.img])
	}
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
// of them (*.tar, else *.tar.gz and *.tgz).
func WDSFiles(p string) []string {
	if IsTar(p) {
		return []string{p}
	}
	if m := sortedTars(p); len(m) > 0 {
		return m
	}
	m, _ := filepath.Glob(filepath.Join(p, "*.tar.gz"))
	t, _ := filepath.Glob(filepath.Join(p, "*.tgz"))
	m = append(m, t...)
	slices.Sort(m)
	return m
}

// Label returns sample i's label: labeled false when it has no label
// member (or an unusable one), and damage the reason when it has one that
// cannot be used ("" when it has none at all, or a good one).
func (d *WDS) Label(i int) (label int, labeled bool, damage string) {
	s := &d.samples[i]
	it := d.items[i]
	switch {
	case s.noLabel:
		return 0, false, ""
	case s.badLbl != "":
		return 0, false, s.badLbl
	case it.Label > MaxLabel:
		return it.Label, false, labelError(d.files[s.file], s.key, s.hdrOff, it.Label).(*CorruptError).Reason
	}
	return it.Label, true, ""
}

// Image reads sample i's image member whatever its label, checked as
// Load checks it (nil, nil when the sample has no image member), and
// returns its format ("" when the bytes are no image).
func (d *WDS) Image(i int) (data []byte, format string, err error) {
	s := &d.samples[i]
	if s.img < 0 {
		return nil, "", nil
	}
	if s.line > 0 {
		data, err = d.readIndexed(s, s.members[s.img])
	} else {
		data, err = d.readMember(s.file, s.members[s.img])
	}
	return data, Sniff(data), err
}

// Members returns the member extensions of sample i.
func (d *WDS) Members(i int) []string {
	var out []string
	for _, m := range d.samples[i].members {
		out = append(out, m.ext)
	}
	return out
}
