package shard

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/source"
)

// packed packs a small tree into two splits of one directory and returns it.
func packed(t *testing.T) string {
	t.Helper()
	src := makeFolder(t, []string{"a", "b"}, 3)
	s, err := source.OpenImageFolder(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	for _, split := range []string{"train", "val"} {
		if _, err := Pack(context.Background(), s, src, dst, PackOptions{Split: split, Shards: 2}); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestVerifyRejectsBadManifests: verify finds a problem naming the
// manifest for each way a manifest can be wrong (before: several passed).
func TestVerifyRejectsBadManifests(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"unparsable", nil, "unexpected end of JSON"},
		{"no splits", func(m map[string]any) { m["splits"] = map[string]any{} }, "no splits"},
		{"shard listed twice", func(m map[string]any) {
			sh := split(m, "train")["shards"].([]any)
			sh[1] = sh[0]
		}, "listed already"},
		{"shard listed in two splits", func(m map[string]any) {
			split(m, "val")["shards"].([]any)[0] = split(m, "train")["shards"].([]any)[0]
		}, "listed already"},
		{"shard incomplete", func(m map[string]any) {
			split(m, "train")["shards"].([]any)[0].(map[string]any)["complete"] = false
		}, "incomplete"},
		{"wrong shard count", func(m map[string]any) { split(m, "train")["num_shards"] = 3 }, "num_shards is 3"},
		{"path outside", func(m map[string]any) {
			split(m, "train")["shards"].([]any)[0].(map[string]any)["name"] = "../../etc/passwd"
		}, "outside the dataset directory"},
		{"absolute path", func(m map[string]any) {
			split(m, "train")["shards"].([]any)[0].(map[string]any)["index"] = "/etc/passwd"
		}, "outside the dataset directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := packed(t)
			mp := filepath.Join(dst, ManifestName)
			if tc.edit == nil {
				os.WriteFile(mp, []byte("{"), 0o644)
			} else {
				b, _ := os.ReadFile(mp)
				var m map[string]any
				json.Unmarshal(b, &m)
				tc.edit(m)
				b, _ = json.Marshal(m)
				os.WriteFile(mp, b, 0o644)
			}
			rep, err := Verify(context.Background(), []string{dst}, VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range rep.Problems {
				found = found || p.Path == mp && strings.Contains(p.Reason, tc.want) || strings.Contains(p.Reason, mp) && strings.Contains(p.Reason, tc.want)
			}
			if rep.OK() || !found {
				t.Fatalf("want a problem of %s saying %q, got %v", mp, tc.want, rep.Problems)
			}
		})
	}
}

func split(m map[string]any, name string) map[string]any {
	return m["splits"].(map[string]any)[name].(map[string]any)
}

// FuzzManifest: any bytes parse to a manifest whose every shard and index
// name is a unique local path, or to an error; a parsed manifest
// round-trips through JSON.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"version":1,"format":"tfrecord","splits":{"train":{"num_shards":1,"complete":true,"shards":[{"name":"train-00000-of-00001.tfrecord","index":"train-00000-of-00001.idx","records":3,"bytes":99,"complete":true}]}}}`))
	f.Add([]byte(`{"version":1,"splits":{"a":{"num_shards":2,"shards":[{"name":"x"},{"name":"x"}]}}}`))
	f.Add([]byte(`{"version":1,"splits":{"a":null}}`))
	f.Add([]byte(`{"version":1,"splits":{"a":{"num_shards":1,"shards":[{"name":"../x"}]}}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b, "m.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "m.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, sp := range m.Splits {
			if sp.NumShards != len(sp.Shards) {
				t.Fatalf("shard count %d vs %d", sp.NumShards, len(sp.Shards))
			}
			for _, sh := range sp.Shards {
				if !filepath.IsLocal(sh.Name) || seen[sh.Name] {
					t.Fatalf("shard name %q accepted", sh.Name)
				}
				seen[sh.Name] = true
			}
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseManifest(again, "m.json"); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// flaky fails to load the items in fail, as a file that is unreadable for
// a while (a permission, an I/O error) does.
type flaky struct {
	source.Source
	fail map[int]bool
}

func (f flaky) Load(i int) (source.Sample, error) {
	if f.fail[i] {
		return source.Sample{}, errors.New("read: input/output error")
	}
	return f.Source.Load(i)
}

// TestPackRepacksShardsWhoseSkippedFilesAreReadable: a rerun packs again
// the shards that skipped a file it can read now (before: the shard was
// kept and the file never packed).
func TestPackRepacksShardsWhoseSkippedFilesAreReadable(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 4)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	res, err := Pack(context.Background(), flaky{src, map[int]bool{2: true}}, root, dst, PackOptions{Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 2 || res.Records != 7 { // broken.jpg and the flaky one
		t.Fatalf("first run: %d records, %d skipped %v", res.Records, res.Skipped, res.SkipList)
	}
	res, err = Pack(context.Background(), flaky{src, nil}, root, dst, PackOptions{Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 8 || res.Skipped != 1 || res.KeptShards != 2 {
		t.Fatalf("rerun: %d records (want 8), %d skipped, %d shards kept (want 2)", res.Records, res.Skipped, res.KeptShards)
	}
}

// TestPackLocksDestination: a second pack into a destination another pack
// is writing fails at once, saying so (before: the two raced).
func TestPackLocksDestination(t *testing.T) {
	root := makeFolder(t, []string{"a"}, 2)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	unlock, err := lockDir(dst) // the other pack
	if err != nil {
		t.Fatal(err)
	}
	_, err = Pack(context.Background(), src, root, dst, PackOptions{})
	if err == nil || !strings.Contains(err.Error(), "another faster pack") {
		t.Fatalf("want a lock error, got %v", err)
	}
	unlock()
	if _, err := Pack(context.Background(), src, root, dst, PackOptions{}); err != nil {
		t.Fatalf("after the other pack: %v", err)
	}
}

// TestPackRefusesDestinationInsideSource: the shards would become a class
// of their own on the next run.
func TestPackRefusesDestinationInsideSource(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 2)
	src, _ := source.OpenImageFolder(root)
	for _, dst := range []string{filepath.Join(root, "shards"), filepath.Join(root, "a", "deep", "shards"), root} {
		_, err := Pack(context.Background(), src, root, dst, PackOptions{})
		if err == nil || !strings.Contains(err.Error(), "inside the source") {
			t.Fatalf("%s: want a refusal, got %v", dst, err)
		}
	}
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(root, link)
	if _, err := Pack(context.Background(), src, root, filepath.Join(link, "out"), PackOptions{}); err == nil {
		t.Fatal("a destination inside the source through a symlink was accepted")
	}
}
