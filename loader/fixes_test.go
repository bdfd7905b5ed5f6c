package loader

import (
	"strings"
	"testing"

	"github.com/faster-training/faster/shard"
)

// TestWDSManifestEveryShard: a WebDataset manifest that disagrees with
// several shards reports every one of them: one error naming each, or one
// quarantine row each under the skip policy (before: only the first).
func TestWDSManifestEveryShard(t *testing.T) {
	dir := packWDS(t)
	m, _ := shard.LoadManifest(dir)
	sh := m.Splits["train"].Shards
	sh[0].Records--
	sh[1].Records++
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	err := openErr(t, dir, Options{Transform: None, Batch: 4})
	if err == nil || !strings.Contains(err.Error(), sh[0].Name) || !strings.Contains(err.Error(), sh[1].Name) {
		t.Fatalf("want one error naming %s and %s, got %v", sh[0].Name, sh[1].Name, err)
	}
	l, err := Open(dir, Options{Transform: None, Batch: 4, BadData: BadDataPolicy{Skip: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bad := l.Bad()
	if len(bad) != 2 || !strings.HasSuffix(bad[0].Path, sh[0].Name) || !strings.HasSuffix(bad[1].Path, sh[1].Name) {
		t.Fatalf("skip policy: quarantined %+v, want one row each of %s and %s", bad, sh[0].Name, sh[1].Name)
	}
	if n := len(runEpoch(t, l, 0).keys); n != 12 {
		t.Fatalf("%d samples served, want 12", n)
	}
}
