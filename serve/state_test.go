//go:build linux

package serve

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/faster-training/faster/loader"
)

// A consumer's epoch request with a state (or an epoch) that cannot be
// served is refused with a 'N' frame naming what is wrong, and the session
// goes on: the next good request is served (issue 41 item 10: before, the
// server sent 'X' and exited, so a load_state_dict(epoch=-1 or 2^62) ended
// the training's data at its next iteration). A list of states is decoded
// one state at a time, refused at the first bad one.
func TestServeRefusesStateSessionLives(t *testing.T) {
	data := makeTree(t, 3) // 9 images
	lo := loader.Options{Transform: loader.Eval, Resolution: 16, Batch: 4, Seed: 3, Workers: 1}
	l, err := loader.Open(data, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := ForLoader(l, lo)
	o.Dir, o.Slots = t.TempDir(), 2
	fp := l.Fingerprint()
	if o.Fingerprint != fp || fp == "" {
		t.Fatalf("ForLoader's fingerprint %q, the loader's %q", o.Fingerprint, fp)
	}
	c, done := start(t, context.Background(), l, o)
	if c.hello.Fingerprint != fp {
		t.Fatalf("hello's fingerprint %q, want %q", c.hello.Fingerprint, fp)
	}
	c.attach()
	state := func(epoch int, extra string) string {
		return fmt.Sprintf(`{"version":2,"epoch":%d,"seed":3,"shuffle":false,"samples":9%s}`, epoch, extra)
	}
	many := "[" + strings.TrimSuffix(strings.Repeat("{},", loader.MaxWorld+1), ",") + "]"
	for _, tc := range []struct {
		name  string
		epoch int64
		state string
		want  string
	}{
		{"epoch-negative", -1, "", "epoch -1"},
		{"epoch-huge", 1 << 62, "", "epoch 4611686018427387904"},
		{"state-epoch-negative", 0, state(-1, `,"segments":[{"world":1,"consumed":[1]}]`), "epoch -1"},
		{"state-epoch-huge", 0, state(1<<62, `,"segments":[{"world":1,"consumed":[1]}]`), "epoch 4611686018427387904"},
		{"state-steps-negative", 0, state(0, `,"segments":[{"world":1,"consumed":[1],"steps":-5,"batch":4}]`), "segments[0].steps -5"},
		{"state-counts", 0, state(0, `,"segments":[{"world":2,"consumed":[1]}]`), "segments[0].consumed: 1 counts for world 2"},
		{"state-malformed", 0, `{"version":2,"epoch":"x"}`, "the consumer's state"},
		{"state-other-data", 0, state(0, `,"fingerprint":"v1:00000000deadbeef","segments":[{"world":1,"consumed":[1]}]`), "v1:00000000deadbeef"},
		{"states-many", 0, many, "the consumer's state 0"}, // refused at the first, never all decoded
		{"states-two-data", 0, "[" + state(0, `,"fingerprint":"v1:1111111111111111","segments":[{"world":2,"consumed":[1,-1]}]`) + "," +
			state(0, `,"fingerprint":"v1:2222222222222222","segments":[{"world":2,"consumed":[-1,1]}]`) + "]", "different data"},
	} {
		p := binary.LittleEndian.AppendUint64(nil, uint64(tc.epoch))
		c.send(FrameEpoch, append(p, tc.state...))
		typ, msg := c.recv()
		if typ != FrameRefused || !strings.Contains(string(msg), tc.want) {
			t.Fatalf("%s: frame %q %q; want %q naming %q", tc.name, typ, msg, FrameRefused, tc.want)
		}
	}
	// The session lives: a good state is served, the rest of its epoch.
	c.send(FrameEpoch, append(binary.LittleEndian.AppendUint64(nil, 1), state(1, `,"fingerprint":"`+fp+`","segments":[{"world":1,"consumed":[4]}]`)...))
	rows := 0
	for {
		typ, p := c.recv()
		if typ == FrameEnd {
			break
		}
		r := parseReady(t, typ, p)
		rows += r.valid
		c.free(r.slot)
	}
	if rows != 5 {
		t.Fatalf("resumed after 4 of 9: %d rows served, want 5", rows)
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
