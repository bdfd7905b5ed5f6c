package registry

import (
	"slices"
	"sync"
	"testing"
)

func TestRegistry(t *testing.T) {
	var r Registry[int]
	if _, ok := r.Get("a"); ok || len(r.Names()) != 0 {
		t.Fatal("zero registry is not empty")
	}
	var wg sync.WaitGroup
	for i, n := range []string{"b", "a", "c"} {
		wg.Add(1)
		go func() { defer wg.Done(); r.Register(n, i) }()
	}
	wg.Wait()
	r.Register("a", 7) // replaces
	if v, ok := r.Get("a"); !ok || v != 7 {
		t.Fatalf("Get(a) = %d, %v", v, ok)
	}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Names() = %v", got)
	}
}
