package loader

import (
	"context"
	"errors"
	"testing"
)

// OpenContext stops with the caller's context: a cancelled context ends
// the open (shard.Open's listing and reading) with its error instead of
// opening the dataset, and Open (context.Background()) still opens it.
func TestOpenContextCancelled(t *testing.T) {
	_, root := makeTreeShards(t, 2, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := OpenContext(ctx, root, Options{Batch: 2, Resolution: 16})
	if err == nil {
		l.Close()
		t.Fatal("OpenContext with a cancelled context opened the dataset")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("OpenContext with a cancelled context: %v, want context.Canceled", err)
	}
	l, err = Open(root, Options{Batch: 2, Resolution: 16})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}
