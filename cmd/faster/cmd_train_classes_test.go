package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
	"github.com/faster-training/faster/train"
)

// photoTree writes an ImageFolder of classes class folders (c000, c001,
// …) with perClass side×side JPEGs each, tiles of the real photographs of
// Debian's mate-backgrounds (decoded at 1/8 scale): class k's tiles come
// from photo k mod P at its own place.
func photoTree(t *testing.T, root string, classes, perClass, side int) {
	t.Helper()
	paths, _ := filepath.Glob(testenv.PhotoDir + "/*.jpg")
	if len(paths) < 4 {
		testenv.Missing(t, "mate-backgrounds missing")
	}
	var photos []*imgcodec.Image
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{ScaleDenom: 8})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		defer img.Release()
		photos = append(photos, img)
	}
	for k := range classes {
		dir := filepath.Join(root, fmt.Sprintf("c%03d", k))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ph := photos[k%len(photos)]
		cols := max(1, (ph.Width-side)/side)
		for j := range perClass {
			at := k/len(photos)*perClass + j
			x0, y0 := (at%cols)*side%(ph.Width-side), (at/cols)*side%(ph.Height-side)
			rgba := image.NewRGBA(image.Rect(0, 0, side, side))
			for y := range side {
				for x := range side {
					src := ph.Pix[(y0+y)*ph.Stride+(x0+x)*ph.Channels:]
					copy(rgba.Pix[(y*side+x)*4:], []byte{src[0], src[1%ph.Channels], src[2%ph.Channels], 255})
				}
			}
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, rgba, &jpeg.Options{Quality: 90}); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.jpg", j)), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

type classesSummary struct {
	Classes     int `json:"classes"`
	TrainImages int `json:"train_images"`
	TestImages  int `json:"test_images"`
	Images      int `json:"images"`
}

// `faster train` sizes the model's head from the data: 110 classes of
// real photographs as an ImageFolder and as packed shards train (they
// failed with "label out of range" when the head had 10 outputs), and a
// checkpoint of 110 classes does not resume on data of 12.
func TestTrainManyClasses(t *testing.T) {
	tmp := t.TempDir()
	trainDir, testDir := filepath.Join(tmp, "train"), filepath.Join(tmp, "val")
	photoTree(t, trainDir, 110, 2, 24)
	photoTree(t, testDir, 110, 1, 24)
	small := []string{"--resolution", "16", "--filters", "4,8", "--batch", "44", "--lr", "0.01", "--threads", "1", "--json"}
	check := func(what, out string, want classesSummary) {
		t.Helper()
		var got classesSummary
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		if got != want {
			t.Errorf("%s: summary %+v, want %+v", what, got, want)
		}
	}
	ckpt := filepath.Join(tmp, "many.ckpt")
	code, out, errs := runCLI(t, append([]string{"train", "--data", trainDir, "--test-data", testDir, "--checkpoint", ckpt}, small...)...)
	if code != 0 {
		t.Fatalf("ImageFolder of 110 classes: exit %d: %s", code, errs)
	}
	check("imagefolder", out, classesSummary{Classes: 110, TrainImages: 220, TestImages: 110, Images: 220})

	packed := filepath.Join(tmp, "packed")
	if code, _, errs := runCLI(t, "pack", trainDir, packed, "--split", "train", "--shards", "3"); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := runCLI(t, "pack", testDir, packed, "--split", "test", "--shards", "2"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs = runCLI(t, append([]string{"train", "--data", packed}, small...)...)
	if code != 0 {
		t.Fatalf("shards of 110 classes: exit %d: %s", code, errs)
	}
	check("shards", out, classesSummary{Classes: 110, TrainImages: 220, TestImages: 110, Images: 220})

	// --classes may add outputs no label uses, not remove classes.
	code, out, errs = runCLI(t, append([]string{"train", "--data", packed, "--classes", "128"}, small...)...)
	if code != 0 {
		t.Fatalf("--classes 128: exit %d: %s", code, errs)
	}
	check("--classes 128", out, classesSummary{Classes: 128, TrainImages: 220, TestImages: 110, Images: 220})
	for _, n := range []string{"100", "2000000"} {
		if code, _, errs := runCLI(t, append([]string{"train", "--data", packed, "--classes", n}, small...)...); code != 2 {
			t.Errorf("--classes %s for 110 classes: exit %d, want 2: %s", n, code, errs)
		}
	}

	// The checkpoint of the 110-class model on data of 12 classes.
	few, fewTest := filepath.Join(tmp, "few"), filepath.Join(tmp, "few-val")
	photoTree(t, few, 12, 4, 24)
	photoTree(t, fewTest, 12, 1, 24)
	code, _, errs = runCLI(t, append([]string{"train", "--data", few, "--test-data", fewTest, "--checkpoint", ckpt, "--epochs", "2"}, small...)...)
	if code != 1 || !strings.Contains(errs, "110 classes") || !strings.Contains(errs, "has 12 classes") {
		t.Errorf("110-class checkpoint on 12 classes: exit %d, want 1 naming both counts: %s", code, errs)
	}

	// Test data whose classes are not the training data's (c003 missing
	// shifts the labels of all after it): an error, not labels that
	// silently disagree.
	if err := os.Rename(filepath.Join(fewTest, "c003"), filepath.Join(fewTest, "x003")); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI(t, append([]string{"train", "--data", trainDir, "--test-data", fewTest}, small...)...)
	if code != 1 || !strings.Contains(errs, "labels would not agree") {
		t.Errorf("test data of other classes: exit %d: %s", code, errs)
	}
}

// Both models' heads have as many outputs as the data has classes.
func TestTrainModelHead(t *testing.T) {
	b := train.NewReference(train.BackendOptions{})
	defer b.Close()
	for _, model := range []string{"thinnet", "resnet18"} {
		net, err := fit.NewModel(b, model, nil, 3, 32, 110, 1)
		if err != nil {
			t.Fatal(err)
		}
		ps := net.Params()
		last := ps[len(ps)-1]
		net.Close()
		if last.Name != "fc.bias" || len(last.Value) != 110 {
			t.Errorf("%s: last parameter %s[%d], want fc.bias[110]", model, last.Name, len(last.Value))
		}
	}
}

// writeTFImageNet writes the images of an ImageFolder tree as TensorFlow's
// build_imagenet_data.py does: shards of tf.train.Example with its keys,
// image/class/label counting from 1 (0 is its background class), no
// manifest, and an .idx beside each shard (as DALI's tfrecord2idx makes).
// It returns the shards' glob.
func writeTFImageNet(t *testing.T, tree, dir, split string, shards int) string {
	t.Helper()
	src, err := source.OpenImageFolder(tree)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o755)
	items := src.Items()
	for s := range shards {
		name := filepath.Join(dir, fmt.Sprintf("%s-%05d-of-%05d", split, s, shards))
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w := tfrecord.NewWriter(f)
		for i := s; i < len(items); i += shards {
			it := items[i]
			data, err := os.ReadFile(filepath.Join(tree, it.Key))
			if err != nil {
				t.Fatal(err)
			}
			ex := tfexample.New().SetInt64("image/height", 24).SetInt64("image/width", 24).
				SetString("image/colorspace", "RGB").SetInt64("image/channels", 3).
				SetInt64("image/class/label", int64(it.Label+1)).
				SetString("image/class/synset", src.Classes()[it.Label]).
				SetString("image/format", "JPEG").SetString("image/filename", filepath.Base(it.Key)).
				SetBytes("image/encoded", data)
			if err := w.Write(ex.Marshal(nil)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		f, err = os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := tfrecord.BuildIndex(f)
		f.Close()
		var ib bytes.Buffer
		if err == nil {
			err = tfrecord.WriteIndex(&ib, idx)
		}
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(name+".idx", ib.Bytes(), 0o644)
	}
	return filepath.Join(dir, split+"-?????-of-?????")
}

// Shards from TensorFlow's ImageNet scripts train with --label-offset -1
// and --classes (they record neither); without the offset the last class
// is out of range, an error naming the shard and offset.
func TestTrainTFImageNetShards(t *testing.T) {
	tmp := t.TempDir()
	tree, val := filepath.Join(tmp, "train"), filepath.Join(tmp, "val")
	photoTree(t, tree, 12, 3, 24)
	photoTree(t, val, 12, 1, 24)
	dir := filepath.Join(tmp, "tf")
	trainGlob, valGlob := writeTFImageNet(t, tree, dir, "train", 3), writeTFImageNet(t, val, dir, "validation", 1)
	args := []string{"train", "--data", trainGlob, "--test-data", valGlob, "--resolution", "16", "--filters", "4,8",
		"--batch", "12", "--lr", "0.01", "--threads", "1", "--json"}
	code, out, errs := runCLI(t, append(args, "--label-offset", "-1", "--classes", "12")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum classesSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Classes != 12 || sum.TrainImages != 36 || sum.TestImages != 12 {
		t.Errorf("summary %+v", sum)
	}
	if code, _, errs := runCLI(t, append(args, "--label-offset", "-1")...); code != 2 || !strings.Contains(errs, "--classes") {
		t.Errorf("no --classes: exit %d, want 2 asking for --classes: %s", code, errs)
	}
	code, _, errs = runCLI(t, append(args, "--classes", "12")...)
	if code != 1 || !strings.Contains(errs, "label 12") || !strings.Contains(errs, "offset ") || !strings.Contains(errs, dir) {
		t.Errorf("1-based labels without the offset: exit %d, want 1 naming the record: %s", code, errs)
	}
	// An offset is for stored labels: not an ImageFolder's, not IDX's.
	code, _, errs = runCLI(t, "train", "--data", tree, "--test-data", val, "--label-offset", "-1", "--resolution", "16", "--batch", "12")
	if code != 1 || !strings.Contains(errs, "ImageFolder") {
		t.Errorf("ImageFolder with --label-offset: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, "train", "--data", writeTrainIDX(t, 8), "--label-offset", "-1", "--batch", "4"); code != 2 {
		t.Errorf("IDX with --label-offset: exit %d, want 2: %s", code, errs)
	}
}
