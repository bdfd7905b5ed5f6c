// Package blkio simulates slower storage with the kernel's block-IO
// throttle, so that a loading benchmark can be run as if the data lived on a
// hard disk or a SATA SSD, on a machine whose disk is faster than either.
//
// A Group is a cgroup (v1 blkio.throttle.read_bps_device /
// read_iops_device, or v2 io.max, whichever the machine mounts) with read
// limits on the block device that holds the data. Processes run in it
// through Command, which starts them inside the group from their first
// instruction (a shell writes its own pid into the group, then execs the
// command), so not one read escapes the limit. Reads from the page cache
// are not throttled: call Evict on the dataset before each run (it drops
// the dataset's pages only, so the reader's own binary and libraries are
// not read through the throttle), or DropCaches to drop everything.
//
//	g, err := blkio.NewGroup("faster-hdd")
//	dev, err := blkio.DeviceOf("/data/imagenet")
//	err = g.Limit(dev, blkio.HDD)
//	blkio.Evict("/data/imagenet")
//	cmd := g.Command(ctx, "faster", "bench", "load", "/data/imagenet", "--json")
//	out, err := cmd.Output()
//	st, err := g.Stats(dev) // bytes and reads the group took from dev
//	g.Remove()
//
// Everything here needs root and a kernel with the blkio (v1) or io (v2)
// controller; Available says why not where they are missing. Linux only.
package blkio

import "errors"

// Limits are read limits on one device; zero means unlimited.
type Limits struct {
	ReadBPS  int64 // bytes per second
	ReadIOPS int64 // read requests per second
}

// The storage classes of the Faster Training study's "Data Loading" table.
var (
	// HDD is a 7,200 rpm hard disk: about 150 random reads per second,
	// 120 MB/s sequential.
	HDD = Limits{ReadBPS: 120e6, ReadIOPS: 150}
	// SSD is a SATA SSD: about 20,000 reads per second, 500 MB/s.
	SSD = Limits{ReadBPS: 500e6, ReadIOPS: 20000}
)

// Stats are what a group read from one device since it was created.
type Stats struct {
	ReadBytes int64
	Reads     int64
}

// ErrUnavailable marks a machine where throttling cannot be set up (not
// root, no blkio/io controller, not Linux).
var ErrUnavailable = errors.New("blkio: block-IO throttling unavailable")
