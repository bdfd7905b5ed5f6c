package collective

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAgreeSize: ranks started with different WORLD_SIZE values each fail
// at rendezvous naming both sizes and the rank that disagrees (before:
// Gloo's raw "enforce fail", or a wait for a rank that never comes); ranks
// that agree pass.
func TestAgreeSize(t *testing.T) {
	for _, tc := range []struct {
		sizes []int // by rank
		want  []string
	}{
		{sizes: []int{3, 3, 3}},
		{sizes: []int{2, 3}, want: []string{
			`this rank (0) has WORLD_SIZE=2, rank 1 has WORLD_SIZE="3"`,
			`this rank (1) has WORLD_SIZE=3, rank 0 has WORLD_SIZE="2"`}},
		{sizes: []int{3, 3, 2}, want: []string{
			`this rank (0) has WORLD_SIZE=3, rank 2 has WORLD_SIZE="2"`,
			`this rank (1) has WORLD_SIZE=3, rank 2 has WORLD_SIZE="2"`,
			`this rank (2) has WORLD_SIZE=2, rank 0 has WORLD_SIZE="3"`}},
	} {
		srv, err := ListenStore("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, len(tc.sizes))
		var wg sync.WaitGroup
		for rank, size := range tc.sizes {
			s, err := DialStore(srv.Addr().String(), 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[rank] = AgreeSize(s, "g/", rank, size)
			}()
		}
		wg.Wait()
		srv.Close()
		for rank, err := range errs {
			switch {
			case tc.want == nil && err != nil:
				t.Errorf("sizes %v, rank %d: %v", tc.sizes, rank, err)
			case tc.want != nil && (err == nil || !strings.Contains(err.Error(), tc.want[rank])):
				t.Errorf("sizes %v, rank %d: %v, want %q", tc.sizes, rank, err, tc.want[rank])
			}
		}
	}
}
