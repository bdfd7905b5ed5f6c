package loader_test

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"log"
	"os"
	"path/filepath"

	"github.com/faster-training/faster/loader"
)

// A loader over an ImageFolder (one directory per class, as torchvision's
// ImageFolder reads it): the evaluation recipe (resize, centre crop,
// normalise to float32 CHW) in batches of two. Each batch's Data holds
// Valid rows of RowBytes; Items name each row's file and label. The same
// Open reads packed TFRecord or WebDataset shards, a Caffe LMDB, or shards
// under s3:// and gs:// URLs.
func Example() {
	root, err := os.MkdirTemp("", "imagefolder")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	for _, class := range []string{"cat", "dog"} {
		os.Mkdir(filepath.Join(root, class), 0o755)
		for i := range 2 {
			writeJPEG(filepath.Join(root, class, fmt.Sprintf("%d.jpg", i)), uint8(60*i))
		}
	}

	l, err := loader.Open(root, loader.Options{Transform: loader.Eval, Resolution: 32, Batch: 2, Workers: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	fmt.Println("classes", l.Classes(), "steps", l.StepsPerEpoch(), "row bytes", l.RowBytes(32))
	for b, err := range l.Iter(context.Background()) {
		if err != nil {
			log.Fatal(err)
		}
		for _, it := range b.Items[:b.Valid] {
			fmt.Println(b.Index, it.Key, it.Label) // Key: the file under root
		}
		b.Release()
	}
	// Output:
	// classes [cat dog] steps 2 row bytes 12288
	// 0 cat/0.jpg 0
	// 0 cat/1.jpg 0
	// 1 dog/0.jpg 1
	// 1 dog/1.jpg 1
}

// writeJPEG writes a 48×40 picture whose colour depends on v.
func writeJPEG(path string, v uint8) {
	m := image.NewRGBA(image.Rect(0, 0, 48, 40))
	for y := range 40 {
		for x := range 48 {
			m.Set(x, y, color.RGBA{v, uint8(4 * x), uint8(5 * y), 255})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := jpeg.Encode(f, m, nil); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
