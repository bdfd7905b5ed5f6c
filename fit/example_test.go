package fit_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/faster-training/faster/fit"
)

// A training run from Go: the configuration `faster train` builds from
// its flags, the data opened once, one Run, its Summary (what `faster
// train --json` prints). The data here is a tiny MNIST-style IDX
// directory written on the spot; any --data path works the same way
// (Fashion-MNIST's directory, a packed dataset, an ImageFolder tree, an
// s3:// URL).
func ExampleRun() {
	dir, err := os.MkdirTemp("", "mnist")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	writeIDX(dir, 32)

	cfg := fit.DefaultConfig()
	cfg.Data.Path, cfg.Batch, cfg.Epochs = dir, 8, 2
	cfg.Model.Backend, cfg.Model.Filters = "reference", []int{4, 4, 4}
	if err := cfg.Validate(); err != nil {
		log.Fatal(err) // a *fit.ConfigError: every problem at once
	}
	ctx := context.Background()
	data, err := fit.OpenData(ctx, &cfg, 0, 1) // rank 0 of 1
	if err != nil {
		log.Fatal(err)
	}
	defer data.Close()
	sum, err := fit.Run(ctx, cfg, data, nil, fit.Hooks{
		Epoch: func(e fit.EpochSummary) { fmt.Printf("epoch %d: %d images\n", e.Epoch, e.Images) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum.Model, sum.Backend, sum.Classes, "classes,", sum.TrainImages, "training images,", len(sum.WeightsSHA256)/2, "bytes of weights' digest")
	// Output:
	// epoch 1: 32 images
	// epoch 2: 32 images
	// thinnet reference 10 classes, 32 training images, 32 bytes of weights' digest
}

// writeIDX writes n 28×28 train and t10k images of 10 classes in the IDX
// format.
func writeIDX(dir string, n int) {
	for _, prefix := range []string{"train", "t10k"} {
		img := []byte{0, 0, 8, 3, 0, 0, 0, byte(n), 0, 0, 0, 28, 0, 0, 0, 28}
		lab := []byte{0, 0, 8, 1, 0, 0, 0, byte(n)}
		for i := range n {
			for p := range 28 * 28 {
				img = append(img, byte((i*31+p*7)%256))
			}
			lab = append(lab, byte(i%10))
		}
		os.WriteFile(filepath.Join(dir, prefix+"-images-idx3-ubyte"), img, 0o644)
		os.WriteFile(filepath.Join(dir, prefix+"-labels-idx1-ubyte"), lab, 0o644)
	}
}
