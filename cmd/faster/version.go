package main

import (
	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/buildinfo"
	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda"
)

// versionText is `faster --version`: the version, commit and toolchain,
// and what this build can do, each as the package that has it says (CUDA:
// what train/cuda finds on this machine, "no driver: tried …" without one).
func versionText() string {
	return buildinfo.Read(buildinfo.Features{
		JPEG: imgcodec.Backend, JPEGLink: imgcodec.BackendLink,
		Backends: train.Backends(), Collectives: collective.Libraries(),
		CUDA: cuda.Probe(),
	}).String()
}
