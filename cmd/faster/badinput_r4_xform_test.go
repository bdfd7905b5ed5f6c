package main

import (
	"errors"
	"strings"
	"testing"
)

// The transform-parameter rows of docs/badinput.md (issue 41, items 6 and
// 10): each is refused before the loader opens, a usage error naming the
// flag and the values it may take.
func init() {
	usageRow := func(needle string, args ...string) func(t *testing.T) badFixture {
		return func(t *testing.T) badFixture {
			return badFixture{data: writeFolder(t, 2, 2), needle: needle, loadArgs: args}
		}
	}
	badFixtures["resize-huge"] = usageRow("--resize 4294967296", "--transform", "eval", "--resize", "4294967296")
	badFixtures["magnitude-bins-huge"] = usageRow("--magnitude-bins 1099511627776", "--auto-augment", "ta-wide", "--magnitude-bins", "1099511627776")
	badFixtures["erasing-ratio-inf"] = usageRow("--erasing-ratio", "--erasing-prob", "1", "--erasing-ratio", "inf,inf")
	badFixtures["crop-ratio-inf"] = usageRow("--crop-ratio", "--crop-ratio", "inf,inf")
	badFixtures["param-nan"] = usageRow("--crop-scale", "--crop-scale", "NaN,NaN")
	badFixtures["crop-range"] = usageRow("--crop-scale", "--crop-scale", "0.5,0.2")
	badFixtures["jitter-float32"] = usageRow("--color-jitter", "--color-jitter", "3.5e38,0,0,0")
	badFixtures["blur-kernel-resolution"] = usageRow("--blur-kernel", "--blur-kernel", "33")
	badFixtures["num-shards-huge"] = usageRow("--num-shards", "--num-shards", "4000000000")
}

// TestTransformFlagsBounded: every numeric transform flag with a NaN, an
// infinity, a value beyond float32 (torchvision draws in float32 and
// raises "out of bounds for float"), a reversed or out-of-range range, or
// a count that would be allocated, is a usage error naming the flag and
// the values it takes, before anything is opened (before: accepted, then
// out of memory, a panic in IntN, a hang, black or NaN pixels with exit 0,
// or an error blaming the first image).
func TestTransformFlagsBounded(t *testing.T) {
	for _, c := range []struct{ args, flag string }{
		// Counts: allocated or looped over.
		{"--transform eval --resize 1099511627776", "--resize"},
		{"--transform eval --resize 16385", "--resize"},
		{"--transform eval --resize -1", "--resize"},
		{"--auto-augment ta-wide --magnitude-bins 1099511627776", "--magnitude-bins"},
		{"--auto-augment ra --magnitude-bins 100000 --ra-m 9", "--magnitude-bins"},
		{"--num-shards 4000000000", "--num-shards"},
		{"--num-shards 9223372036854775807 --shard-index 5", "--num-shards"},
		// RandomErasing's ratio: torchvision takes log(ratio) in float32.
		{"--erasing-prob 1 --erasing-ratio inf,inf", "--erasing-ratio"},
		{"--erasing-prob 1 --erasing-ratio 1e300,1e300", "--erasing-ratio"},
		{"--erasing-prob 1 --erasing-ratio 1,3.5e38", "--erasing-ratio"},
		// RandomResizedCrop's ranges.
		{"--crop-ratio inf,inf", "--crop-ratio"},
		{"--crop-ratio 1e300,1e300", "--crop-ratio"},
		{"--crop-ratio NaN,NaN", "--crop-ratio"},
		{"--crop-ratio 0,0", "--crop-ratio"},
		{"--crop-ratio 1e-300,1", "--crop-ratio"},
		{"--crop-ratio 2,1", "--crop-ratio"},
		{"--crop-ratio -1,1", "--crop-ratio"},
		{"--crop-scale NaN,NaN", "--crop-scale"},
		{"--crop-scale 0.5,0.2", "--crop-scale"},
		{"--crop-scale -1,1", "--crop-scale"},
		{"--crop-scale 2,3", "--crop-scale"},
		{"--flip-prob NaN", "--flip-prob"},
		// ColorJitter beyond float32.
		{"--color-jitter 3.5e38,0,0,0", "--color-jitter"},
		{"--color-jitter inf,0,0,0", "--color-jitter"},
		{"--color-jitter 0,3.5e38,0,0", "--color-jitter"},
		{"--color-jitter 0,0,inf,0", "--color-jitter"},
		{"--color-jitter 0,inf,1,1,1,1,0,0", "--color-jitter"},
		// Normalize: NaN or infinite pixels; a std whose float32 is 0
		// (torchvision: "std evaluated to zero after conversion to
		// torch.float32").
		{"--mean NaN,0,0 --std 1,1,1", "--mean"},
		{"--mean inf,0,0 --std 1,1,1", "--mean"},
		{"--mean 1e300,0,0 --std 1,1,1", "--mean"},
		{"--mean 0,0,0 --std NaN,1,1", "--std"},
		{"--mean 0,0,0 --std inf,1,1", "--std"},
		{"--mean 0,0,0 --std 1e-300,1,1", "--std"},
		// GaussianBlur's kernel against the image it blurs (torchvision:
		// "Padding size should be less than the corresponding input
		// dimension").
		{"--resolution 16 --blur-kernel 33", "--blur-kernel"},
		{"--resolution 16 --blur-kernel 3,255", "--blur-kernel"},
		// A sigma of 0 as a float32: torchvision raises "sigma should have
		// positive values" (before: taken).
		{"--blur-kernel 3 --blur-sigma 1e-300", "--blur-sigma"},
	} {
		_, err := parseLoaderFlags(t, strings.Fields(c.args)...)
		var u *usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), c.flag) || !strings.Contains(err.Error(), "want") {
			t.Errorf("%s: %v; want a usage error naming %s and what it takes", c.args, err, c.flag)
		}
	}
	// The edges that torchvision takes are still taken.
	for _, args := range []string{
		"--transform eval --resize 16384",
		"--auto-augment ta-wide --magnitude-bins 1024",
		"--erasing-prob 1 --erasing-ratio 3e38,3e38",
		"--crop-ratio 1e-30,3e38",
		"--crop-scale 0,0",
		"--flip-prob 0",
		"--color-jitter 3e38,3e38,3e38,0.5",
		"--mean 0,0,0 --std 3e38,1e-30,1",
		"--resolution 16 --blur-kernel 31",
		"--num-shards 1048576 --shard-index 1048575",
	} {
		if _, err := parseLoaderFlags(t, strings.Fields(args)...); err != nil {
			t.Errorf("%s: %v; want it taken", args, err)
		}
	}
}
