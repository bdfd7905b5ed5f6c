package shard

import (
	"encoding/json"
	"io/fs"
	"maps"
	"testing"
	"time"

	"github.com/faster-training/faster/tfrecord"
)

// fakeStat is a file's stat as countEntry.holds reads it.
type fakeStat struct {
	size  int64
	mtime time.Time
}

func (f fakeStat) Name() string       { return "f" }
func (f fakeStat) Size() int64        { return f.size }
func (f fakeStat) Mode() fs.FileMode  { return 0o644 }
func (f fakeStat) ModTime() time.Time { return f.mtime }
func (f fakeStat) IsDir() bool        { return false }
func (f fakeStat) Sys() any           { return nil }

// FuzzCountsFile: the counts file parser (CountsName) never panics; what
// it accepts has its version and shards and writes back to the same
// entries; and an entry holds only for a file of its size, modification
// time and stamp, with a count that file can hold (never negative, never
// more 16-byte TFRecord frames than its bytes, none in an empty shard and
// some in a shard of some bytes).
func FuzzCountsFile(f *testing.F) {
	f.Add([]byte(`{"version": 1, "shards": {"train-00000-of-01024": {"size": 146923912, "mtime_ns": 1733200000000000000, "records": 1251, "stamp": "146923912:1733200000000000000:2049:77:1733200000000000000"}}}`))
	f.Add([]byte(`{"version": 1, "shards": {"a": {"size": 32, "mtime_ns": 5, "records": 3, "stamp": "s"}, "b": {"size": 0, "mtime_ns": 0, "records": 0, "stamp": "s"}}}`))
	f.Add([]byte(`{"version": 1, "shards": {"a": {"size": 100, "mtime_ns": 5, "records": -1, "stamp": "s"}}}`))
	f.Add([]byte(`{"version": 1, "shards": null}`))
	f.Add([]byte(`{"version": 2, "shards": {}}`))
	f.Add([]byte(`{"version": 1, "shards": {"a": {"records": 9223372036854775807}}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, err := parseCounts(data)
		if err != nil {
			return
		}
		if cf.Version != countsVersion || cf.Shards == nil {
			t.Fatalf("accepted version %d, shards %v", cf.Version, cf.Shards)
		}
		b, err := json.Marshal(cf)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseCounts(b)
		if err != nil || !maps.Equal(again.Shards, cf.Shards) {
			t.Fatalf("round trip: %v, %v != %v", err, again, cf)
		}
		for name, e := range cf.Shards {
			st := fakeStat{e.Size, time.Unix(0, e.MTimeNs)}
			for _, min := range []int64{tfrecord.FrameSize, 0} {
				if !e.holds(st, e.Stamp, min) {
					continue
				}
				if e.Records < 0 || e.Stamp == "" || min > 0 && (int64(e.Records) > e.Size/min || (e.Records == 0) != (e.Size == 0)) {
					t.Fatalf("%s: entry %+v holds (record at least %d bytes)", name, e, min)
				}
			}
			if e.holds(fakeStat{e.Size + 1, st.mtime}, e.Stamp, 0) || e.holds(st, e.Stamp+"x", 0) {
				t.Fatalf("%s: entry %+v holds for another file", name, e)
			}
		}
	})
}
