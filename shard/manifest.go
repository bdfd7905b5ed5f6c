package shard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/faster-training/faster/internal/atomicfile"
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
}

// Skip names an input that was left out, and why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// LoadManifest reads dir/manifest.json. A missing file gives an empty
// manifest and no error.
func LoadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestName)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &Manifest{Version: ManifestVersion, Format: "tfrecord", Splits: map[string]*Split{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("%s: manifest version %d, this build reads %d", p, m.Version, ManifestVersion)
	}
	if m.Splits == nil {
		m.Splits = map[string]*Split{}
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
