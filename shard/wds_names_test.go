package shard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/source"

	"github.com/faster-training/faster/internal/testenv"
)

// pyStreamMembers is how webdataset reads a tar: tarfile in streaming mode
// ('r|*'), regular members in order, each named by base_plus_ext's regular
// expression (the key up to the first dot of the base name). It prints one
// JSON line a member: key, extension, name, data offset, size, sha256.
const pyStreamMembers = `
import hashlib, json, re, sys, tarfile
with tarfile.open(sys.argv[1], "r|*") as tf:
    for m in tf:
        if not m.isreg():
            continue
        g = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", m.name)
        data = tf.extractfile(m).read()
        print(json.dumps({"key": g.group(1), "ext": g.group(2), "name": m.name, "offset": m.offset_data,
                          "size": m.size, "sha": hashlib.sha256(data).hexdigest()}))
`

// pngBytes is an 8x8 gray PNG whose first pixel is v.
func pngBytes(t *testing.T, v uint8) []byte {
	img := image.NewGray(image.Rect(0, 0, 8, 8))
	img.Pix[0] = v
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A file named café.jpg, 日本.png or with a name of 150 bytes is packed
// into WebDataset shards with a PAX "path" record, as Python's tarfile
// writes one (issue 41 item 4; before: "cannot encode header", the pack
// failed). White space in a name becomes "_" in its key (before: the
// index line of "my photo.png" had 15 fields, and a name holding a
// newline cut it in two: verify said BAD of a fresh pack), and keys made
// alike (a.x, a_x, a_x_1) stay apart (before: two samples keyed a_x_1,
// one sample to webdataset); a file named .png is keyed cls/_ (before:
// cls/, no sample's key: the scan dropped it and verify said BAD). Read back, every name is whole: by our reader from the index
// pack writes (no index fault: the header after a PAX record holds a
// stand-in name) and by scanning, and by Python's tarfile in webdataset's
// streaming mode, which groups the members under the keys our reader
// reports, at the data offsets the index lists (the index tiles the tar
// with the PAX headers in it).
func TestPackWDSNonASCIINames(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("x", 146) + ".png" // 150 bytes
	files := map[string][]byte{
		"cls/café.jpg":      jpegBytes(t, 16, 8, 1),
		"cls/日本.png":        pngBytes(t, 3),
		"cls/" + long:       pngBytes(t, 4),
		"cls/plain.png":     pngBytes(t, 5),
		"cls/my photo.png":  pngBytes(t, 6),
		"cls/tab\there.png": pngBytes(t, 7),
		"cls/new\nline.png": pngBytes(t, 8),
		"cls/a.x.png":       pngBytes(t, 9), // keys a_x, a_x_1, a_x_1_1
		"cls/a_x.png":       pngBytes(t, 10),
		"cls/a_x_1.png":     pngBytes(t, 11),
		"cls/.png":          pngBytes(t, 12), // key cls/_
		"ünï/" + strings.Repeat("é", 60) + ".jpg": jpegBytes(t, 8, 8, 2), // 120 bytes of base name, a non-ASCII class
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := source.OpenImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	res, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 1, Format: FormatWDS})
	if err != nil || res.Records != int64(len(files)) {
		t.Fatalf("pack: %+v %v", res, err)
	}
	tarPath := filepath.Join(dst, FormatName(FormatWDS, "train", 0, 1))

	// Our reader, from the index and by scanning.
	type sample struct {
		key, sha string
		exts     []string
		off      int64
	}
	read := func(how string) []sample {
		w, err := source.OpenWDS([]string{tarPath})
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		defer w.Close()
		if len(w.IndexFaults()) > 0 || len(w.Damage()) > 0 {
			t.Fatalf("%s: index faults %+v, damage %+v", how, w.IndexFaults(), w.Damage())
		}
		var out []sample
		for i, it := range w.Items() {
			s, err := w.Load(i)
			if err != nil {
				t.Fatalf("%s: sample %d: %v", how, i, err)
			}
			sum := sha256.Sum256(s.Data)
			want := sha256.Sum256(files[it.Key])
			if sum != want || src.Classes()[s.Label] != strings.SplitN(it.Key, "/", 2)[0] {
				t.Fatalf("%s: sample %d %q: label %d, image %x, want the file's", how, i, it.Key, s.Label, sum[:4])
			}
			_, off := w.Where(i)
			out = append(out, sample{it.Key, hex.EncodeToString(sum[:]), w.Members(i), off})
		}
		if len(out) != len(files) {
			t.Fatalf("%s: %d samples, want %d", how, len(out), len(files))
		}
		return out
	}
	indexed := read("indexed")
	if err := os.Rename(source.WDSIndexName(tarPath), source.WDSIndexName(tarPath)+".away"); err != nil {
		t.Fatal(err)
	}
	scanned := read("scanned")
	os.Rename(source.WDSIndexName(tarPath)+".away", source.WDSIndexName(tarPath))
	for i := range indexed {
		if indexed[i].key != scanned[i].key || !slices.Equal(indexed[i].exts, scanned[i].exts) {
			t.Fatalf("sample %d: indexed %+v, scanned %+v", i, indexed[i], scanned[i])
		}
	}

	// Python's tarfile, streaming, with webdataset's keys.
	if _, err := os.Stat(testenv.Python); err != nil {
		testenv.Missing(t, "%s missing", testenv.Python)
	}
	out, err := exec.Command(testenv.Python, "-c", pyStreamMembers, tarPath).Output()
	if err != nil {
		t.Fatalf("python tarfile: %v", err)
	}
	type pyMember struct {
		Key, Ext, Name, Sha string
		Offset, Size        int64
	}
	var members []pyMember
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m pyMember
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("python line %q: %v", line, err)
		}
		members = append(members, m)
	}
	if len(members) != 3*len(files) {
		t.Fatalf("Python reads %d members, want 3 a sample: %+v", len(members), members)
	}
	idx, err := os.ReadFile(source.WDSIndexName(tarPath))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(idx)), "\n")[1:]
	if len(lines) != len(indexed) {
		t.Fatalf("%d index lines for %d samples:\n%s", len(lines), len(indexed), idx)
	}
	for i, s := range indexed {
		group := members[3*i : 3*i+3]
		f := strings.Fields(lines[i])
		if len(f) != 12 {
			t.Fatalf("index line %d: %q, want 12 fields", i+2, lines[i])
		}
		for j, m := range group {
			if m.Key != group[0].Key || (i > 0 && m.Key == members[3*i-1].Key) || !strings.HasPrefix(m.Key, WDSKey(s.key)) || m.Ext != s.exts[j] {
				t.Errorf("sample %d %q: Python's member %d is %q (key %q, ext %q); our reader's key %q, exts %v", i, s.key, j, m.Name, m.Key, m.Ext, WDSKey(s.key), s.exts)
			}
			// v1.2 index lines: ext offset size name, a member each.
			if off, _ := strconv.ParseInt(f[4*j+1], 10, 64); off != m.Offset || f[4*j+2] != strconv.FormatInt(m.Size, 10) {
				t.Errorf("sample %d member %s: index offset %s size %s, Python's %d %d", i, m.Ext, f[4*j+1], f[4*j+2], m.Offset, m.Size)
			}
		}
		if group[0].Sha != s.sha {
			t.Errorf("sample %d %q: Python's image differs", i, s.key)
		}
	}

	// verify agrees.
	rep, err := Verify(context.Background(), []string{dst}, VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
