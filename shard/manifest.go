package shard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/source"
)

// ManifestName is the manifest's file name inside a packed dataset.
const ManifestName = "manifest.json"

// ManifestVersion is the manifest schema version written by this package.
const ManifestVersion = 1

// Manifest describes a packed dataset: one entry per split.
type Manifest struct {
	Version int               `json:"version"`
	Format  string            `json:"format"` // "tfrecord" or "wds"
	Splits  map[string]*Split `json:"splits"`
}

// Split describes the shards of one split.
type Split struct {
	SourceKind  string      `json:"source_kind"` // "imagefolder", "idx"
	Source      string      `json:"source"`      // source path as given
	Classes     []string    `json:"classes"`
	NumShards   int         `json:"num_shards"`
	Shuffle     bool        `json:"shuffle"`
	Seed        uint64      `json:"seed"`
	Fingerprint string      `json:"fingerprint"` // sha256 of the item list and layout
	Records     int64       `json:"records"`
	Bytes       int64       `json:"bytes"`
	Complete    bool        `json:"complete"`
	Shards      []ShardInfo `json:"shards"`
}

// ShardInfo describes one shard file.
type ShardInfo struct {
	Name     string `json:"name"`
	Index    string `json:"index"`
	Records  int64  `json:"records"`
	Bytes    int64  `json:"bytes"`
	SHA256   string `json:"sha256"`
	Complete bool   `json:"complete"`
	Skipped  []Skip `json:"skipped,omitempty"`
	// SourceStamp digests the source.Stamper stamps of the shard's
	// inputs, taken before they were read ("" for a source without
	// stamps): a rerun keeps the shard only when they are unchanged.
	SourceStamp string `json:"source_stamp,omitempty"`
}

// Skip names an input that was left out, and why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// LoadManifest reads dir/manifest.json. A missing file gives an empty
// manifest and no error; one that cannot be read or parsed, or that fails
// ParseManifest's checks, is an error naming the file.
func LoadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestName)
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return &Manifest{Version: ManifestVersion, Format: "tfrecord", Splits: map[string]*Split{}}, nil
	}
	b, err := source.ReadFile(p, MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return ParseManifest(b, p)
}

// MaxManifestSize is the largest manifest read (64 MiB: about 200,000
// shards).
const MaxManifestSize = 64 << 20

// ParseManifest decodes a manifest (name is used in errors) and checks
// what no packer writes and no reader may follow: a version other than
// ManifestVersion, a format other than tfrecord or wds, a shard or index
// name that is not a local path inside the dataset directory, a shard
// listed twice, a split whose shard count differs from its list, negative
// counts.
func ParseManifest(b []byte, name string) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("%s: manifest version %d, this build reads %d", name, m.Version, ManifestVersion)
	}
	if m.Format != "" && m.Format != FormatTFRecord && m.Format != FormatWDS {
		return nil, fmt.Errorf("%s: format %q: want %s or %s", name, m.Format, FormatTFRecord, FormatWDS)
	}
	if m.Splits == nil {
		m.Splits = map[string]*Split{}
	}
	seen := map[string]string{}
	for _, split := range slices.Sorted(maps.Keys(m.Splits)) {
		sp := m.Splits[split]
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%s: split %q: %s", name, split, fmt.Sprintf(format, a...))
		}
		if sp == nil {
			return nil, bad("null")
		}
		if sp.NumShards != len(sp.Shards) {
			return nil, bad("num_shards is %d but %d shards are listed", sp.NumShards, len(sp.Shards))
		}
		if sp.Records < 0 || sp.Bytes < 0 {
			return nil, bad("negative counts (%d records, %d bytes)", sp.Records, sp.Bytes)
		}
		for i, sh := range sp.Shards {
			for j, f := range []string{sh.Name, sh.Index} {
				if f == "" && j == 1 {
					continue // an index is optional
				}
				if !filepath.IsLocal(f) || strings.ContainsRune(f, '\\') {
					return nil, bad("shard %d names %q, a path outside the dataset directory", i, f)
				}
				if other, dup := seen[f]; dup {
					return nil, bad("shard %d names %q, listed already (split %q)", i, f, other)
				}
				seen[f] = split
			}
			if sh.Records < 0 || sh.Bytes < 0 {
				return nil, bad("shard %q: negative counts (%d records, %d bytes)", sh.Name, sh.Records, sh.Bytes)
			}
		}
	}
	return &m, nil
}

// Save writes the manifest to dir/manifest.json atomically.
func (m *Manifest) Save(dir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, ManifestName), append(b, '\n'), 0o644)
}
