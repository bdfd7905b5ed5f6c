//go:build cgo

package loader

import (
	"bytes"
	"image"
	"image/jpeg"
	"strings"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/source/sourcetest"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestLMDBDatumWithoutLabel: a Datum without a label field is a damaged
// sample, which stops the epoch or is quarantined under the skip policy,
// as a TFRecord record without image/class/label is (before: it read as
// label 0).
func TestLMDBDatumWithoutLabel(t *testing.T) {
	var keys []string
	var vals [][]byte
	for i, name := range []string{"a.jpg", "nolabel.jpg", "c.jpg"} {
		img := image.NewRGBA(image.Rect(0, 0, 20, 16))
		for p := range img.Pix {
			img.Pix[p] = uint8(p*7 + i*50)
		}
		var jb bytes.Buffer
		if err := jpeg.Encode(&jb, img, nil); err != nil {
			t.Fatal(err)
		}
		v := (&source.Datum{Data: jb.Bytes(), Encoded: true, Label: i}).Marshal(nil)
		if name == "nolabel.jpg" { // Datum fields data (4) and encoded (7) only
			v = protowire.AppendTag(nil, 4, protowire.BytesType)
			v = protowire.AppendBytes(v, jb.Bytes())
			v = protowire.AppendTag(v, 7, protowire.VarintType)
			v = protowire.AppendVarint(v, 1)
		}
		keys, vals = append(keys, name), append(vals, v)
	}
	db := sourcetest.WriteLMDB(t, keys, vals)
	_, _, err := loadLabels(t, db, Options{Transform: None, Batch: 4, Shuffle: ShuffleOff})
	if err == nil || !strings.Contains(err.Error(), "no label") || !strings.Contains(err.Error(), "nolabel.jpg") {
		t.Fatalf("stop policy: want an error naming the Datum without a label, got %v", err)
	}
	got, bad, err := loadLabels(t, db, Options{Transform: None, Batch: 4, Shuffle: ShuffleOff, BadData: BadDataPolicy{Skip: true}})
	if err != nil || len(bad) != 1 || bad[0].Key != "nolabel.jpg" || bad[0].Path != db || len(got) != 2 || got["a.jpg"] != 0 || got["c.jpg"] != 2 {
		t.Fatalf("skip policy: labels %v, quarantined %+v, %v", got, bad, err)
	}
}
