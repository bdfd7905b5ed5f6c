//go:build cgo

package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/source/sourcetest"
)

// TestInspectLMDBOffsets: faster inspect shows each LMDB value's byte
// offset in data.mdb (before: "@-1" for every record), and the bytes
// there are the value's.
func TestInspectLMDBOffsets(t *testing.T) {
	var keys []string
	var vals [][]byte
	for i := range 3 {
		keys = append(keys, fmt.Sprintf("%08d_c%d/x%d.png", i, i%2, i))
		vals = append(vals, (&source.Datum{Data: wdsFixtureSamples(t, 1, false)[0].Members[0].Data, Encoded: true, Label: i % 2}).Marshal(nil))
	}
	db := sourcetest.WriteLMDB(t, keys, vals)
	code, out, errs := runCLI(t, "inspect", db)
	offs := regexp.MustCompile(`@(-?\d+) `).FindAllStringSubmatch(out, -1)
	if code != 0 || len(offs) != 3 || strings.Contains(out, "@-1") {
		t.Fatalf("want 3 records at real offsets, exit %d\n%s%s", code, out, errs)
	}
	l, err := source.OpenLMDB(db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 {
		if off := l.ValueOffset(i); fmt.Sprint(off) != offs[i][1] || off <= 0 {
			t.Fatalf("record %d: offset %d, inspect says %s", i, off, offs[i][1])
		}
	}
}
