package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/shard/shardtest"
)

// longDir is a directory name that makes member names longer than the
// 100 bytes of a tar header's name field: GNU long-name headers in GNU
// tars, PAX records in PAX tars, a prefix split in ustar ones.
var longDir = strings.Repeat("d", 120)

// pngOf is an 8×8 PNG whose colour says its sample and label.
func pngOf(t testing.TB, i, label int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for p := range img.Pix {
		img.Pix[p] = []uint8{uint8(i * 20), uint8(label * 80), 7, 255}[p%4]
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// classSamples are n classification samples as a WebDataset writer makes
// them: an image and a .cls label each, every other one with upper-case
// extensions (.PNG, .CLS), every third under a long directory when long.
func classSamples(t testing.TB, n int, long bool) []shardtest.WDSSample {
	var out []shardtest.WDSSample
	for i := range n {
		label := i % 3
		dir := fmt.Sprintf("c%d", label)
		if long && i%3 == 1 {
			dir = longDir + "/c" + strconv.Itoa(label)
		}
		img, cls := "png", "cls"
		if i%2 == 1 {
			img, cls = "PNG", "CLS"
		}
		out = append(out, shardtest.WDSSample{Key: fmt.Sprintf("%s/img_%03d", dir, i), Members: []shardtest.WDSMember{
			{Ext: img, Data: pngOf(t, i, label)}, {Ext: cls, Data: []byte(strconv.Itoa(label))},
		}})
	}
	return out
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// checkAgainstRef checks the samples of an opened tar against what
// Python's tarfile and webdataset's rules say of it.
func checkAgainstRef(t *testing.T, w *WDS, ref []shardtest.RefSample) {
	t.Helper()
	if len(w.Damage()) > 0 {
		t.Fatalf("damage in a valid tar: %+v", w.Damage())
	}
	if len(w.Items()) != len(ref) {
		t.Fatalf("%d samples, Python's tarfile groups %d", len(w.Items()), len(ref))
	}
	for i, r := range ref {
		it := w.Items()[i]
		s, err := w.Load(i)
		_, off := w.Where(i)
		// The sample's first header; listed from an index, its first
		// member's own header (after any long-name or PAX headers).
		okOff := off == r.Offset || off == r.Data[0][0]-512
		if err != nil || !strings.HasPrefix(it.Key, r.Key+".") || r.Label == nil || s.Label != *r.Label || r.Image == nil || sha(s.Data) != *r.Image || !okOff {
			t.Fatalf("sample %d: key %q label %d offset %d err %v; Python: %+v", i, it.Key, s.Label, off, err, r)
		}
	}
}

// TestWDSWrittenByOtherTools: tars written by GNU tar (gnu, pax, ustar and
// v7 formats, long names making GNU long-name headers and PAX records)
// and by Python's tarfile (as webdataset's TarWriter writes them; a
// .tar.gz through Python's gzip) read with the samples, labels, image
// bytes and offsets that Python's tarfile and webdataset's rules give
// (extensions lower-cased: .PNG and .CLS members are the image and the
// label; before, every .CLS label was lost and the sample was class 0).
// Indexes written as DALI's wds2idx writes them, in its v1.2 format and
// its legacy v1.1 triples, are read when right; when wrong (its current
// version beside PAX headers, its old one beside GNU long names), the
// first wrong line is named, file and line, and the tar is scanned.
func TestWDSWrittenByOtherTools(t *testing.T) {
	type writer struct {
		tool, format string
		long         bool
	}
	wrong := map[string]bool{} // tool/format/algo whose index was wrong
	for _, wr := range []writer{
		{"gnu-tar", "gnu", true}, {"gnu-tar", "pax", true}, {"gnu-tar", "ustar", true}, {"gnu-tar", "v7", false},
		{"python", "pax", true}, {"python", "gnu", true}, {"python", "ustar", true},
	} {
		name := wr.tool + "-" + wr.format
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), classSamples(t, 6, wr.long))
			p := filepath.Join(dir, "shard-000.tar")
			if wr.tool == "gnu-tar" {
				shardtest.GNUTar(t, wr.format, filepath.Join(dir, "tree"), p, names)
			} else {
				shardtest.PyTar(t, wr.format, filepath.Join(dir, "tree"), p, names)
			}
			ref := shardtest.WDSRef(t, p)
			if len(ref) != 6 {
				t.Fatalf("Python's tarfile sees %d samples", len(ref))
			}
			w, err := OpenWDS([]string{p})
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstRef(t, w, ref)
			w.Close()

			for _, algo := range []string{shardtest.WDS2IdxCurrent, shardtest.WDS2IdxOld} {
				for _, version := range []string{"v1.2", "v1.1"} {
					ip := WDSIndexName(p)
					lines := shardtest.DALIIndex(t, p, ip, algo, version)
					wantLine := 0 // the first line whose offsets are not Python's
					for j, r := range ref {
						f := strings.Fields(lines[j+1])
						per := map[bool]int{true: 4, false: 3}[version == "v1.2"]
						for k, d := range r.Data {
							if off, _ := strconv.ParseInt(f[k*per+1], 10, 64); off != d[0] && wantLine == 0 {
								wantLine = j + 2
							}
						}
					}
					w, err := OpenWDS([]string{p})
					if err != nil {
						t.Fatalf("%s %s: %v", algo, version, err)
					}
					faults := w.IndexFaults()
					if wantLine == 0 && len(faults) > 0 {
						t.Fatalf("%s %s: a right index refused: %+v\n%s", algo, version, faults, strings.Join(lines, "\n"))
					}
					if wantLine > 0 {
						wrong[name+"/"+algo] = true
						if len(faults) == 1 {
							t.Logf("%s %s: %s", algo, version, faults[0].Reason)
						}
						if len(faults) != 1 || faults[0].Path != ip || !strings.Contains(faults[0].Reason, fmt.Sprintf("index line %d:", wantLine)) || !strings.Contains(faults[0].Reason, "wrong index") {
							t.Fatalf("%s %s: want one fault naming %s line %d, got %+v\n%s", algo, version, ip, wantLine, faults, strings.Join(lines, "\n"))
						}
					}
					checkAgainstRef(t, w, ref) // from the index, or the scan
					w.Close()
					os.Remove(ip)
				}
			}
		})
	}
	// The bugs the issue met: DALI's current wds2idx beside PAX headers,
	// its old one beside GNU long names.
	if !t.Failed() && (!wrong["gnu-tar-pax/current"] || !wrong["gnu-tar-gnu/old"] || !wrong["python-gnu/old"]) {
		t.Fatalf("expected wrong indexes not met: %v", wrong)
	}
}

// TestTarGzWrittenByPython: a .tar.gz written by Python's tarfile and
// gzip (as webdataset's TarWriter writes one) is read in order with the
// samples Python's tarfile and webdataset's rules give (before: "corrupt
// at offset 0: length CRC mismatch", a TFRecord error).
func TestTarGzWrittenByPython(t *testing.T) {
	dir := t.TempDir()
	names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), classSamples(t, 7, true))
	p := filepath.Join(dir, "shard-000.tar.gz")
	shardtest.PyTar(t, "pax", filepath.Join(dir, "tree"), p, names)
	ref := shardtest.WDSRef(t, p)
	if _, err := OpenWDS([]string{p}); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Fatalf("random access to a .tar.gz: want an error naming gzip, got %v", err)
	}
	g, err := OpenTarGz([]string{p}, TarGzOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Count(context.Background()); err != nil || g.Counts()[0] != len(ref) {
		t.Fatalf("count %v %v, Python %d", g.Counts(), err, len(ref))
	}
	r, err := g.Open(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, want := range ref {
		rec, err := r.Next()
		if err != nil || rec.Bad != nil || !strings.HasPrefix(rec.Key, want.Key+".") || rec.Label != *want.Label || sha(rec.Data) != *want.Image || rec.Offset != want.Offset || rec.ID != uint64(i) {
			t.Fatalf("sample %d: %+v (key %q) %v; Python %+v", i, rec.Bad, rec.Key, err, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last sample: %v", err)
	}
}

// TestWDSNoLabel: a sample without a label member is damaged, at its
// offset, never class 0 (before: served as class 0, classes ['0']);
// Unlabeled serves it as label 0; in a .tar.gz likewise, and under Skip
// it is a Record with Bad set and reading goes on.
func TestWDSNoLabel(t *testing.T) {
	dir := t.TempDir()
	samples := classSamples(t, 3, false)
	samples[1].Members = samples[1].Members[:1] // no .CLS
	names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), samples)
	p := filepath.Join(dir, "s.tar")
	shardtest.PyTar(t, "pax", filepath.Join(dir, "tree"), p, names)
	w, err := OpenWDS([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Load(1)
	_, off := w.Where(1)
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrNoLabel) || ce.Offset != off || !strings.Contains(err.Error(), "no label") {
		t.Fatalf("a sample without a label: want damage naming it, got %v", err)
	}
	if _, ok, dmg := w.Label(1); ok || dmg != "" {
		t.Fatalf("Label(1) = %v %q", ok, dmg)
	}
	w.Close()
	w, err = OpenWDSWith([]string{p}, WDSOptions{Unlabeled: true})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := w.Load(1); err != nil || s.Label != 0 {
		t.Fatalf("unlabeled: %+v %v", s.Item, err)
	}
	w.Close()

	gz := filepath.Join(dir, "s.tgz")
	shardtest.PyTar(t, "pax", filepath.Join(dir, "tree"), gz, names)
	for _, skip := range []bool{false, true} {
		g, _ := OpenTarGz([]string{gz}, TarGzOptions{Skip: skip})
		r, _ := g.Open(context.Background(), 0)
		r.Next()
		rec, err := r.Next()
		bad := err
		if skip {
			bad = rec.Bad
		}
		if !errors.Is(bad, ErrNoLabel) || (skip && err != nil) {
			t.Fatalf("skip %v: %+v %v", skip, rec, err)
		}
		if rec, err := r.Next(); skip && (err != nil || rec.Bad != nil || rec.Label != 2) || !skip && !errors.Is(err, ErrNoLabel) {
			t.Fatalf("skip %v: after the damaged sample: %+v %v", skip, rec, err)
		}
		r.Close()
	}
}

// FuzzTarGz: whatever a .tar.gz holds, reading it ends (io.EOF or an
// error), never panics, and every good record is an image sample.
func FuzzTarGz(f *testing.F) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(tarBytes(f, "a.png", pngMagic+"a", "a.cls", "1", "b.PNG", pngMagic+"b", "b.CLS", "2"))
	zw.Close()
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:40])
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.tar.gz")
		os.WriteFile(p, data, 0o644)
		for _, skip := range []bool{false, true} {
			g, err := OpenTarGz([]string{p}, TarGzOptions{Skip: skip})
			if err != nil {
				return
			}
			r, err := g.Open(context.Background(), 0)
			if err != nil {
				continue
			}
			for n := 0; ; n++ {
				rec, err := r.Next()
				if err != nil {
					break
				}
				if rec.Bad == nil && Sniff(rec.Data) == "" {
					t.Fatalf("a good record that is no image: %+v", rec)
				}
				if n > len(data) {
					t.Fatal("more records than bytes")
				}
			}
			r.Close()
		}
	})
}
