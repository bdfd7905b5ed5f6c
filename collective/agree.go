package collective

import (
	"fmt"
	"strconv"
)

// AgreeSize checks at rendezvous that every rank was started with the
// same world size (WORLD_SIZE): each rank sets prefix+"size/RANK" to its
// own, then reads those of ranks 0, 1, … below its size, in that order. A
// rank whose size differs from rank 0's fails at the first key, naming
// both, instead of connecting and meeting a collective library's own
// failure (Gloo's "enforce fail") or waiting for a rank that never comes.
// Rank 0 returns its error once the rank it disagrees with has seen the
// disagreement as well.
func AgreeSize(s *Store, prefix string, rank, size int) error {
	key := func(r int) string { return prefix + "size/" + strconv.Itoa(r) }
	if err := s.Set(key(rank), []byte(strconv.Itoa(size))); err != nil {
		return err
	}
	for r := range size {
		if r == rank {
			continue
		}
		v, err := s.Get(key(r))
		if err != nil {
			return err
		}
		if string(v) != strconv.Itoa(size) {
			// Rank 0 may serve the store, which closes when it returns:
			// it first waits until rank r, which read rank 0's size
			// first, has seen the disagreement too (an error of the
			// wait is the one below).
			s.Set(prefix+"size/seen/"+strconv.Itoa(rank), nil)
			if rank == 0 {
				s.Wait([]string{prefix + "size/seen/" + strconv.Itoa(r)})
			}
			return fmt.Errorf("the ranks disagree on the world size: this rank (%d) has WORLD_SIZE=%d, rank %d has WORLD_SIZE=%q; start every rank with the same WORLD_SIZE", rank, size, r, v)
		}
	}
	return nil
}
