package bench

import (
	"strings"
	"testing"
)

// The engines of `faster bench storage`: the default is ours; faster= and
// default= name it; faster-cuda= and faster-cuda:N= are ours decoding on
// that GPU (the study's GPU column); NAME@ROW+ROW restricts an engine to
// rows, which must exist; anything else needs a command.
func TestParseStorageEngines(t *testing.T) {
	rows, err := ParseStorageRows([]string{"tree=/data/tree", "shards=/data/shards,--global-shuffle"})
	if err != nil {
		t.Fatal(err)
	}
	if es, err := ParseStorageEngines(nil, rows); err != nil || len(es) != 1 || es[0].Cmd != DefaultStorageEngine.Cmd {
		t.Fatalf("default engines %v, %v", es, err)
	}
	es, err := ParseStorageEngines([]string{"faster=", "faster-cuda=", "faster-cuda:1@tree=", "tv@tree=python3 peer.py {path}"}, rows)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name, cmdEnd string
		rows         string
	}{
		{DefaultStorageEngine.Name, "{batch} {flags}", ""},
		{"faster bench load --device cuda", "{flags} --device cuda", ""},
		{"faster bench load --device cuda:1", "{flags} --device cuda:1", "tree"},
		{"tv", "peer.py {path}", "tree"},
	}
	if len(es) != len(want) {
		t.Fatalf("%d engines, want %d", len(es), len(want))
	}
	for i, w := range want {
		e := es[i]
		if e.Name != w.name || !strings.HasSuffix(e.Cmd, w.cmdEnd) || (w.rows == "") != (e.Rows == nil) || (w.rows != "" && !e.Rows[w.rows]) {
			t.Errorf("engine %d: %q %q rows %v; want %q ending %q rows %q", i, e.Name, e.Cmd, e.Rows, w.name, w.cmdEnd, w.rows)
		}
	}
	for _, bad := range []string{"faster-cuda:x=", "faster-gpu=", "faster-cuda@nope=", "=cmd", "tv"} {
		if _, err := ParseStorageEngines([]string{bad}, rows); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, ok := GPUStorageEngine("faster-cuda:-1"); ok {
		t.Error("faster-cuda:-1 accepted")
	}
}
