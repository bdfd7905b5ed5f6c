package main

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/shard/shardtest"
)

// The WebDataset rows of docs/badinput.md, on tars written by GNU tar and
// Python's tarfile (shard/shardtest), never by our packer.
func init() {
	badFixtures["wds-no-label"] = func(t *testing.T) badFixture {
		dir := t.TempDir()
		samples := wdsFixtureSamples(t, 3, false)
		samples[1].Members = samples[1].Members[:1] // an image, no .cls
		names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), samples)
		p := filepath.Join(dir, "s.tar")
		shardtest.PyTar(t, "pax", filepath.Join(dir, "tree"), p, names)
		return badFixture{data: p, needle: "no label", loadArgs: []string{"--transform", "none"}}
	}
	badFixtures["wds-wrong-index"] = func(t *testing.T) badFixture {
		dir := t.TempDir()
		names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), wdsFixtureSamples(t, 4, true))
		p := filepath.Join(dir, "s.tar")
		shardtest.GNUTar(t, "gnu", filepath.Join(dir, "tree"), p, names)
		shardtest.DALIIndex(t, p, filepath.Join(dir, "s.idx"), shardtest.WDS2IdxOld, "v1.2")
		return badFixture{data: p, needle: "s.idx", loadArgs: []string{"--transform", "none"}}
	}
	badFixtures["targz-cut"] = func(t *testing.T) badFixture {
		dir := t.TempDir()
		names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), wdsFixtureSamples(t, 6, false))
		p := filepath.Join(dir, "s.tar.gz")
		shardtest.PyTar(t, "pax", filepath.Join(dir, "tree"), p, names)
		b, _ := os.ReadFile(p)
		os.WriteFile(p, b[:len(b)*2/3], 0o644)
		return badFixture{data: p, needle: "s.tar.gz", loadArgs: []string{"--transform", "none"}}
	}
}

// wdsFixtureSamples are n samples of an 8×8 PNG and a .cls label, some
// under a directory long enough to need GNU long-name headers.
func wdsFixtureSamples(t *testing.T, n int, long bool) []shardtest.WDSSample {
	var out []shardtest.WDSSample
	for i := range n {
		var b bytes.Buffer
		img := image.NewGray(image.Rect(0, 0, 8, 8))
		img.Pix[0] = uint8(i)
		png.Encode(&b, img)
		dir := fmt.Sprintf("c%d", i%2)
		if long && i%2 == 1 {
			dir = strings.Repeat("d", 120) + "/" + dir
		}
		out = append(out, shardtest.WDSSample{Key: fmt.Sprintf("%s/s%02d", dir, i), Members: []shardtest.WDSMember{
			{Ext: "png", Data: b.Bytes()}, {Ext: "cls", Data: []byte(fmt.Sprint(i % 2))},
		}})
	}
	return out
}
