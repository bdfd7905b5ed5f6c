package shard

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/shard/shardtest"
	"github.com/faster-training/faster/source"
)

// wdsSamples are n samples of an 8×8 PNG and a .cls label, every other
// one under a directory long enough for GNU long-name headers and PAX
// records.
func wdsSamples(t *testing.T, n int) []shardtest.WDSSample {
	var out []shardtest.WDSSample
	for i := range n {
		var b bytes.Buffer
		img := image.NewGray(image.Rect(0, 0, 8, 8))
		img.Pix[0] = uint8(i)
		png.Encode(&b, img)
		dir := fmt.Sprintf("c%d", i%3)
		if i%2 == 1 {
			dir = strings.Repeat("d", 120) + "/" + dir
		}
		out = append(out, shardtest.WDSSample{Key: fmt.Sprintf("%s/s%02d", dir, i), Members: []shardtest.WDSMember{
			{Ext: "png", Data: b.Bytes()}, {Ext: "cls", Data: []byte(fmt.Sprint(i % 3))},
		}})
	}
	return out
}

// TestOpenTarGz: a directory of .tar.gz shards written by Python's
// tarfile and gzip opens as a streaming WebDataset read in order, with the
// samples Python reads (before: "corrupt at offset 0: length CRC
// mismatch"); several ranks learn the counts; a global shuffle and a gzip
// file holding no tar are refused naming gzip.
func TestOpenTarGz(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	var ref []shardtest.RefSample
	for i := range 2 {
		tree := filepath.Join(dir, fmt.Sprint("tree", i))
		names := shardtest.WriteTree(t, tree, wdsSamples(t, 4+i))
		p := filepath.Join(data, fmt.Sprintf("train-%d.tar.gz", i))
		shardtest.PyTar(t, "pax", tree, p, names)
		ref = append(ref, shardtest.WDSRef(t, p)...)
	}
	ctx := context.Background()
	ds, err := Open(ctx, data, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, ok := ds.(source.Streaming)
	if !ok || ds.Kind() != "wds" || len(st.Files()) != 2 || st.Counts()[0] != -1 {
		t.Fatalf("%T %s %v", ds, ds.Kind(), st)
	}
	var got []source.Record
	for i := range st.Files() {
		r, err := st.Open(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil || rec.Bad != nil {
				t.Fatalf("file %d: %+v %v", i, rec.Bad, err)
			}
			got = append(got, rec)
		}
		r.Close()
	}
	if len(got) != len(ref) {
		t.Fatalf("%d samples, Python %d", len(got), len(ref))
	}
	for i, r := range ref {
		if !strings.HasPrefix(got[i].Key, r.Key+".") || got[i].Label != *r.Label || got[i].Offset != r.Offset {
			t.Fatalf("sample %d: %q %d @%d; Python %+v", i, got[i].Key, got[i].Label, got[i].Offset, r)
		}
	}
	ds, err = Open(ctx, filepath.Join(data, "*.tar.gz"), OpenOptions{Ranks: 2})
	if err != nil || fmt.Sprint(ds.(source.Streaming).Counts()) != "[4 5]" {
		t.Fatalf("two ranks: %v %v", err, ds)
	}
	// The counts are kept beside the shards: the next open reads them
	// there (a count edited in the file is what it gets).
	cp := filepath.Join(data, CountsName)
	kept, err := os.ReadFile(cp)
	if err != nil || !strings.Contains(string(kept), `"records": 5`) {
		t.Fatalf("counts file: %s %v", kept, err)
	}
	os.WriteFile(cp, bytes.Replace(kept, []byte(`"records": 5`), []byte(`"records": 7`), 1), 0o644)
	ds, err = Open(ctx, data, OpenOptions{Ranks: 2})
	if err != nil || fmt.Sprint(ds.(source.Streaming).Counts()) != "[4 7]" {
		t.Fatalf("two ranks, counts kept: %v %v", err, ds)
	}
	if _, err := Open(ctx, data, OpenOptions{GlobalShuffle: true}); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Fatalf("global shuffle: %v", err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte("just some text, not a tar"))
	zw.Close()
	notTar := filepath.Join(dir, "notes.tar.gz")
	os.WriteFile(notTar, b.Bytes(), 0o644)
	if _, err := Open(ctx, notTar, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "gzip") || strings.Contains(err.Error(), "CRC") {
		t.Fatalf("a gzip file holding no tar: %v", err)
	}
}

// TestOpenWDSWrongIndex: a GNU tar with long names and the index DALI's
// old wds2idx writes for it: Open names the index and its line (before:
// every sample "not an image"); under the skip policy the index is
// reported once and every sample is read with its label, from a scan.
func TestOpenWDSWrongIndex(t *testing.T) {
	dir := t.TempDir()
	names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), wdsSamples(t, 6))
	p := filepath.Join(dir, "s.tar")
	shardtest.GNUTar(t, "gnu", filepath.Join(dir, "tree"), p, names)
	ip := filepath.Join(dir, "s.idx")
	shardtest.DALIIndex(t, p, ip, shardtest.WDS2IdxOld, "v1.2")
	ref := shardtest.WDSRef(t, p)
	ctx := context.Background()
	if _, err := Open(ctx, p, OpenOptions{}); err == nil || !strings.Contains(err.Error(), ip) || !strings.Contains(err.Error(), "index line 3: wrong index") {
		t.Fatalf("stop: want the index and its line named, got %v", err)
	}
	var skipped []source.Damage
	ds, err := Open(ctx, p, OpenOptions{Skip: func(d source.Damage, of int) error { skipped = append(skipped, d); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if len(skipped) != 1 || skipped[0].Path != ip || !strings.Contains(skipped[0].Reason, "scanned") {
		t.Fatalf("skip: want the index reported once, got %+v", skipped)
	}
	x := ds.(source.Indexed)
	if x.Len() != len(ref) {
		t.Fatalf("%d samples, Python %d", x.Len(), len(ref))
	}
	for i, r := range ref {
		rec, err := x.Record(i)
		if err != nil || rec.Label != *r.Label || !strings.HasPrefix(rec.Key, r.Key+".") {
			t.Fatalf("sample %d: %+v %v; Python %+v", i, rec.Key, err, r)
		}
	}
}

// TestVerifyDALIIndexes: faster verify accepts the indexes DALI's wds2idx
// writes right, in v1.2 and in the legacy v1.1 triples (before: a v1.1
// index was BAD for lacking names), and names the first wrong line of
// those it writes wrong.
func TestVerifyDALIIndexes(t *testing.T) {
	dir := t.TempDir()
	names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), wdsSamples(t, 4))
	for _, tc := range []struct {
		format, algo, version string
		wrongLine             int
	}{
		{"ustar", shardtest.WDS2IdxCurrent, "v1.2", 0},
		{"ustar", shardtest.WDS2IdxCurrent, "v1.1", 0},
		{"gnu", shardtest.WDS2IdxOld, "v1.2", 3},
		{"gnu", shardtest.WDS2IdxOld, "v1.1", 3},
	} {
		p := filepath.Join(dir, tc.format+tc.algo+tc.version+".tar")
		shardtest.GNUTar(t, tc.format, filepath.Join(dir, "tree"), p, names)
		ip := source.WDSIndexName(p)
		shardtest.DALIIndex(t, p, ip, tc.algo, tc.version)
		rep, err := Verify(context.Background(), []string{p}, VerifyOptions{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.wrongLine == 0 && !rep.OK():
			t.Errorf("%+v: a right index is BAD: %+v", tc, rep.Problems)
		case tc.wrongLine > 0 && (len(rep.Problems) != 1 || rep.Problems[0].Path != ip || !strings.Contains(rep.Problems[0].Reason, fmt.Sprintf("line %d ", tc.wrongLine))):
			t.Errorf("%+v: want line %d of %s named, got %+v", tc, tc.wrongLine, ip, rep.Problems)
		}
	}
}
