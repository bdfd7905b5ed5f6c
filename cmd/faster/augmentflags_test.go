package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/loader"
)

// parseLoaderFlags parses args as `faster serve` / `faster bench load`
// would and returns the loader options they describe (or the usage error).
func parseLoaderFlags(t *testing.T, args ...string) (loader.Options, error) {
	t.Helper()
	var lf loaderFlags
	f := pflag.NewFlagSet("test", pflag.ContinueOnError)
	lf.register(f, "train or eval")
	if err := f.Parse(args); err != nil {
		return loader.Options{}, err
	}
	if err := lf.check(); err != nil {
		return loader.Options{}, err
	}
	return lf.options(1), nil
}

// epochDigest is the SHA-256 of an epoch's keys, labels and pixels.
func epochDigest(t *testing.T, root string, o loader.Options, epoch int) string {
	t.Helper()
	l, err := loader.Open(root, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h := sha256.New()
	for b, err := range l.IterEpoch(context.Background(), epoch) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Valid {
			h.Write([]byte(b.Items[i].Key))
			h.Write([]byte{byte(b.Items[i].Label)})
			h.Write(b.Row(i))
		}
		b.Release()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestAugmentRecipeEqualsFlags: each named recipe gives the batches its
// documented flags give, bit for bit; the augmentations change the pixels
// (not the order); the epoch is decided by (seed, epoch, sample).
func TestAugmentRecipeEqualsFlags(t *testing.T) {
	root := writeFolder(t, 2, 5)
	base := []string{"--batch", "4", "--resolution", "24", "--seed", "7"}
	digest := func(epoch int, args ...string) string {
		o, err := parseLoaderFlags(t, append(append([]string{}, base...), args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return epochDigest(t, root, o, epoch)
	}
	plain := digest(0)
	for _, c := range []struct{ recipe, flags string }{
		{"torchvision", ""},
		{"torchvision-ta-wide", "--auto-augment ta-wide --augment-interpolation bilinear"},
		{"torchvision-ra", "--auto-augment ra --ra-n 2 --ra-m 9 --augment-interpolation bilinear"},
		{"torchvision-aa", "--auto-augment imagenet --augment-interpolation bilinear"},
		{"torchvision-augmix", "--auto-augment augmix --augmix-severity 3 --augment-interpolation bilinear"},
		{"torchvision-v2", "--auto-augment ta-wide --augment-interpolation bilinear --erasing-prob 0.1"},
	} {
		byName := digest(0, "--augment-recipe", c.recipe)
		byFlags := digest(0, strings.Fields(c.flags)...)
		if byName != byFlags {
			t.Errorf("--augment-recipe %s: batches differ from %s", c.recipe, c.flags)
		}
		if (byName == plain) != (c.recipe == "torchvision") {
			t.Errorf("--augment-recipe %s: same pixels as the plain recipe: %v", c.recipe, byName == plain)
		}
	}
	// A flag given explicitly overrides the recipe's value.
	if a, b := digest(0, "--augment-recipe", "torchvision-v2", "--erasing-prob", "0"), digest(0, "--augment-recipe", "torchvision-ta-wide"); a != b {
		t.Error("--augment-recipe torchvision-v2 --erasing-prob 0 differs from torchvision-ta-wide")
	}
	// Erasing on every sample: the recipe's value 0 is a Compose's value=0 ("0.0").
	if a, b := digest(0, "--augment-recipe", "torchvision-v2", "--erasing-prob", "1"),
		digest(0, "--auto-augment", "ta-wide", "--augment-interpolation", "bilinear", "--erasing-prob", "1", "--erasing-value", "0.0"); a != b {
		t.Error("--erasing-prob 1: the recipe's value 0 differs from --erasing-value 0.0")
	}
	// Every op at once, epoch 1: a fresh loader gives the same epoch.
	all := []string{"--auto-augment", "ra", "--ra-n", "3", "--ra-m", "12", "--color-jitter", "0.4,0.4,0.4,0.1",
		"--grayscale-prob", "0.3", "--erasing-prob", "0.5", "--erasing-value", "random", "--augment-fill", "128"}
	if digest(1, all...) != digest(1, all...) || digest(1, all...) == digest(0, all...) {
		t.Error("epoch 1 with every op: not decided by (seed, epoch, sample)")
	}
	// The v2 recipe's eval: Resize(232) + CenterCrop(224).
	if o, err := parseLoaderFlags(t, "--transform", "eval", "--augment-recipe", "torchvision-v2"); err != nil || o.Resize != 232 || o.Resolution != 224 {
		t.Errorf("torchvision-v2 eval: resize %d at %d (%v), want 232 at 224", o.Resize, o.Resolution, err)
	}
	if o, _ := parseLoaderFlags(t, "--transform", "eval", "--augment-recipe", "torchvision-v2", "--resize", "256"); o.Resize != 256 {
		t.Errorf("--resize 256 did not override the recipe's: %d", o.Resize)
	}
}

// TestAugmentFlagsValidation: each bad value is a usage error naming its
// flag, from the CLI.
func TestAugmentFlagsValidation(t *testing.T) {
	root := writeFolder(t, 1, 2)
	for _, c := range []struct{ args, flag string }{
		{"--augment-recipe torchvision-foo", "--augment-recipe"},
		{"--auto-augment cifar10", "--auto-augment"},
		{"--auto-augment ra --ra-n 0", "--ra-n"},
		{"--auto-augment ra --ra-m 31", "--ra-m"},
		{"--magnitude-bins 1", "--magnitude-bins"},
		{"--augmix-severity 11", "--augmix-severity"},
		{"--augment-interpolation bicubic", "--augment-interpolation"},
		{"--augment-fill 1,2", "--augment-fill"},
		{"--augment-fill 300", "--augment-fill"},
		{"--color-jitter 0.4,0.4", "--color-jitter"},
		{"--color-jitter 0.4,0.4,0.4,0.6", "--color-jitter"},
		{"--color-jitter 1,0.5,1,1,1,1,0,0", "--color-jitter"},
		{"--grayscale-prob 1.5", "--grayscale-prob"},
		{"--erasing-prob -0.1", "--erasing-prob"},
		{"--erasing-prob 0.5 --erasing-scale 0.5,0.1", "--erasing-scale"},
		{"--erasing-prob 0.5 --erasing-ratio 0,3", "--erasing-ratio"},
		{"--erasing-prob 0.5 --erasing-value 1,2", "--erasing-value"},
		{"--erasing-prob 0.5 --layout u8-hwc", "--erasing-prob"},
		{"--transform eval --auto-augment ta-wide", "--auto-augment"},
	} {
		args := append([]string{"bench", "load", root, "--batch", "1", "--resolution", "8", "--steps", "1"}, strings.Fields(c.args)...)
		code, _, errs := runCLI(t, args...)
		if code != 2 || !strings.Contains(errs, c.flag) {
			t.Errorf("%s: exit %d, stderr %q; want a usage error naming %s", c.args, code, errs, c.flag)
		}
	}
}

// TestTrainAugmentRecipe: `faster train` takes the same flags: the v2
// recipe trains end to end; a bad value is a usage error naming its flag.
func TestTrainAugmentRecipe(t *testing.T) {
	tree, test := writeFolder(t, 2, 4), writeFolder(t, 2, 2)
	args := []string{"train", "--data", tree, "--test-data", test, "--model", "thinnet", "--filters", "4,8",
		"--resolution", "16", "--batch", "4", "--epochs", "1", "--threads", "1"}
	if code, _, errs := runCLI(t, append(args, "--augment-recipe", "torchvision-v2", "--color-jitter", "0.2,0.2,0.2,0")...); code != 0 {
		t.Fatalf("--augment-recipe torchvision-v2: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, append(args, "--auto-augment", "ta")...); code != 2 || !strings.Contains(errs, "--auto-augment") {
		t.Errorf("--auto-augment ta: exit %d: %s", code, errs)
	}
}
