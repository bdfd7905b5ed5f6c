package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func TestBarCountsAndRenders(t *testing.T) {
	var buf bytes.Buffer // not a terminal: counts, never draws
	b := New(&buf, "pack", 100, "records")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				b.Add(1, 1000)
			}
		}()
	}
	wg.Wait()
	b.Done()
	b.Done() // idempotent
	if b.Items() != 40 {
		t.Fatalf("items %d", b.Items())
	}
	if buf.Len() != 0 {
		t.Fatalf("drew on a non-terminal: %q", buf.String())
	}
	line := b.Line()
	for _, want := range []string{"pack 40/100 (40%) records", "records/s", "MB/s", "ETA"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	b.SetTotal(0)
	if strings.Contains(b.Line(), "ETA") {
		t.Errorf("ETA without a total: %q", b.Line())
	}
}
