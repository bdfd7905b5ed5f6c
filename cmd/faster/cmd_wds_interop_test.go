package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/shard/shardtest"
)

// TestBenchLoadWDSFromOtherTools: WebDataset data as other tools write it
// loads as they wrote it. A directory of .tar.gz shards (Python's tarfile
// and gzip) is read in order (before: "corrupt at offset 0: length CRC
// mismatch"); a GNU long-name tar with the index DALI's wds2idx writes
// for it stops naming the index and its line, and under --on-error skip
// lists the index once and serves every sample (before: every good sample
// "member png: not an image", all quarantined); samples without labels
// stop naming "no label", and --unlabeled serves them.
func TestBenchLoadWDSFromOtherTools(t *testing.T) {
	dir := t.TempDir()
	gzDir := filepath.Join(dir, "gz")
	os.Mkdir(gzDir, 0o755)
	for i := range 2 {
		tree := filepath.Join(dir, fmt.Sprintf("tree%d", i))
		names := shardtest.WriteTree(t, tree, wdsFixtureSamples(t, 5, true))
		shardtest.PyTar(t, "pax", tree, filepath.Join(gzDir, fmt.Sprintf("train-%06d.tar.gz", i)), names)
	}
	common := []string{"--batch", "4", "--resolution", "8", "--workers", "1", "--json"}
	var r loadResult
	code, out, errs := runCLI(t, append([]string{"bench", "load", gzDir}, common...)...)
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Images != 10 || r.Kind != "wds" || r.Bad != 0 {
		t.Fatalf(".tar.gz directory: exit %d, %+v %v\n%s", code, r, err, errs)
	}
	code, _, errs = runCLI(t, append([]string{"bench", "load", gzDir, "--global-shuffle"}, common...)...)
	if code != 1 || !strings.Contains(errs, "gzip") {
		t.Fatalf(".tar.gz with --global-shuffle: want exit 1 naming gzip, got %d %s", code, errs)
	}

	fx := badFixtures["wds-wrong-index"](t)
	code, _, errs = runCLI(t, append([]string{"bench", "load", fx.data}, common...)...)
	if code != 1 || !strings.Contains(errs, "s.idx") || !strings.Contains(errs, "index line 3") || strings.Contains(errs, "not an image") {
		t.Fatalf("wrong index, stop: want exit 1 naming s.idx line 3, got %d %s", code, errs)
	}
	code, out, errs = runCLI(t, append([]string{"bench", "load", fx.data, "--on-error", "skip"}, common...)...)
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Images != 4 || r.Bad != 1 || !strings.HasSuffix(r.Quarantined[0].Path, "s.idx") {
		t.Fatalf("wrong index, skip: want 4 images and the index listed, got exit %d %+v %v\n%s", code, r, err, errs)
	}

	fx = badFixtures["wds-no-label"](t)
	code, out, errs = runCLI(t, append([]string{"bench", "load", fx.data, "--unlabeled"}, common...)...)
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Images != 3 || r.Bad != 0 {
		t.Fatalf("--unlabeled: exit %d %+v %v\n%s", code, r, err, errs)
	}
}

// TestInspectWDS: faster inspect summarises a valid tar whose samples
// have no image (a text and audio dataset) without calling it corrupt,
// and shows each tar sample's real offset (before: "@-1" for every one);
// a .tgz is summarised through gzip.
func TestInspectWDS(t *testing.T) {
	dir := t.TempDir()
	var samples []shardtest.WDSSample
	for i := range 3 {
		samples = append(samples, shardtest.WDSSample{Key: fmt.Sprintf("utt%02d", i), Members: []shardtest.WDSMember{
			{Ext: "flac", Data: []byte("fLaC audio")}, {Ext: "txt", Data: []byte("hello")},
		}})
	}
	names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), samples)
	p := filepath.Join(dir, "speech.tar")
	shardtest.GNUTar(t, "gnu", filepath.Join(dir, "tree"), p, names)
	code, out, errs := runCLI(t, "inspect", p)
	if code != 0 || strings.Contains(strings.ToLower(out), "corrupt") || !strings.Contains(out, "3 records") || strings.Contains(out, "@-1") || !strings.Contains(out, "@2048") {
		t.Fatalf("a valid tar without images: exit %d\n%s%s", code, out, errs)
	}

	gz := filepath.Join(dir, "g.tgz")
	names = shardtest.WriteTree(t, filepath.Join(dir, "tree2"), wdsFixtureSamples(t, 3, false))
	shardtest.PyTar(t, "pax", filepath.Join(dir, "tree2"), gz, names)
	code, out, errs = runCLI(t, "inspect", gz)
	if code != 0 || strings.Contains(strings.ToLower(out), "corrupt") || !strings.Contains(out, "3 records") || strings.Contains(out, "@-1") {
		t.Fatalf(".tgz: exit %d\n%s%s", code, out, errs)
	}
}
