package shard

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParsePart: any bytes parse to a part manifest of task i of T
// (0 <= i < T <= MaxTasks) of a plain split, listing exactly the shards
// TaskShards gives it, in order, under a one-task pack's names (local
// file names), or to an error naming the file; a parsed part round-trips
// through JSON.
func FuzzParsePart(f *testing.F) {
	f.Add([]byte(`{"version":1,"format":"tfrecord","split":"train","task":1,"tasks":2,"first_shard":2,"layout":{"num_shards":4,"complete":true,"shards":[` +
		`{"name":"train-00002-of-00004.tfrecord","index":"train-00002-of-00004.idx","records":3,"bytes":99,"complete":true},` +
		`{"name":"train-00003-of-00004.tfrecord","index":"train-00003-of-00004.idx","records":3,"bytes":99,"complete":true}]}}`))
	f.Add([]byte(`{"version":1,"format":"wds","split":"val","task":0,"tasks":3,"first_shard":0,"layout":{"num_shards":1,"shards":[]}}`))
	f.Add([]byte(`{"version":1,"format":"tfrecord","split":"..","task":0,"tasks":1,"first_shard":0,"layout":{"num_shards":0,"shards":[]}}`))
	f.Add([]byte(`{"version":1,"format":"tfrecord","split":"train","task":0,"tasks":1099511627776,"layout":{}}`))
	f.Add([]byte(`{"version":1,"format":"tfrecord","split":"train","task":0,"tasks":1,"first_shard":0,"layout":{"num_shards":2,"shards":[` +
		`{"name":"train-00001-of-00002.tfrecord","index":"train-00001-of-00002.idx"},{"name":"train-00000-of-00002.tfrecord","index":"train-00000-of-00002.idx"}]}}`))
	f.Add([]byte(`{"version":1,"layout":null}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pt, err := parsePart(b, "p.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "p.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if pt.Tasks < 1 || pt.Tasks > MaxTasks || pt.Task < 0 || pt.Task >= pt.Tasks {
			t.Fatalf("task %d of %d accepted", pt.Task, pt.Tasks)
		}
		if err := CheckSplitName(pt.Split); err != nil {
			t.Fatalf("split accepted: %v", err)
		}
		first, last := TaskShards(pt.Task, pt.Tasks, pt.Layout.NumShards)
		if pt.FirstShard != first || len(pt.Layout.Shards) != last-first {
			t.Fatalf("shards %d+%d accepted for task %d of %d over %d", pt.FirstShard, len(pt.Layout.Shards), pt.Task, pt.Tasks, pt.Layout.NumShards)
		}
		for j, s := range pt.Layout.Shards {
			if s.Name != FormatName(pt.Format, pt.Split, first+j, pt.Layout.NumShards) || !filepath.IsLocal(s.Name) || filepath.Base(s.Name) != s.Name || !filepath.IsLocal(s.Index) {
				t.Fatalf("shard %d named %q (index %q) accepted", j, s.Name, s.Index)
			}
		}
		again, err := json.Marshal(pt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parsePart(again, "p.json"); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}
