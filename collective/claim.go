package collective

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrDuplicateRank marks a rank that joined a group's rendezvous a second
// time: two processes started with one RANK.
var ErrDuplicateRank = errors.New("collective: rank joined twice")

// ClaimRank records in the store that rank has joined the group whose
// keys are under prefix, before the rank touches any other key of it. The
// first claim of a rank succeeds; a second one (another process with the
// same RANK, in this group's store and attempt) fails at once with
// ErrDuplicateRank, naming the rank, and has written nothing the first
// one's group reads: that group goes on. The claim is an atomic counter
// of the store (torch's add), so two claims at the same moment still
// give one first and one second.
func ClaimRank(s *Store, prefix string, rank int) error {
	n, err := s.Add(prefix+"joined/"+strconv.Itoa(rank), 1)
	if err != nil {
		return err
	}
	if n > 1 {
		return &duplicateRankError{rank: rank, n: n}
	}
	return nil
}

// duplicateRankError is ClaimRank's refusal.
type duplicateRankError struct {
	rank int
	n    int64 // the claims so far, this one included
}

func (e *duplicateRankError) Error() string {
	return fmt.Sprintf("rank %d joined this rendezvous twice (%d processes started with RANK=%d): give each process its own RANK, from 0 to WORLD_SIZE-1",
		e.rank, e.n, e.rank)
}

// Is reports ErrDuplicateRank as matching.
func (e *duplicateRankError) Is(target error) bool { return target == ErrDuplicateRank }
