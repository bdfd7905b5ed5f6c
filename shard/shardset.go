package shard

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// What a set of shards' names promise is checked before an epoch trusts
// them (Open) and reported by Verify: a split's shards named
// <split>-NNNNN-of-NNNNN are all there, N of N, of one shard count; the
// files of one dataset are of one format; a split packed as tasks is
// merged. (A glob or a list of paths selects shards: it may name some of
// a split's.)

// shardName is a file name parsed as <split>-<index>-of-<total><ext>.
type shardName struct {
	split, index, total, ext string
}

func parseShardName(name string) (shardName, bool) {
	m := shardNameRE.FindStringSubmatch(name)
	if m == nil {
		return shardName{}, false
	}
	return shardName{m[1], m[2], m[3], m[4]}, true
}

// maxListed is how many missing shards an error names before "and N more".
const maxListed = 8

// missingShards checks that files (paths or object names of one split,
// named <split>-NNNNN-of-NNNNN) are every shard their names promise: one
// total N, and each index 0..N-1 present. It returns the names of the
// missing shards (in the present ones' digits and extension), N and the
// first shard's name, or an error naming two files of different totals.
func missingShards(files []string) (missing []string, total int, proto shardName, err error) {
	have := map[int]bool{}
	var first string
	for _, f := range files {
		n, ok := parseShardName(path.Base(filepath.ToSlash(f)))
		if !ok {
			continue
		}
		if first == "" {
			first, proto = f, n
			total, err = strconv.Atoi(n.total)
			if err != nil || total <= 0 {
				return nil, 0, proto, fmt.Errorf("%s: a shard name of %s shards", f, n.total)
			}
		} else if t, err := strconv.Atoi(n.total); err != nil || t != total {
			return nil, 0, proto, fmt.Errorf("%s and %s: one split named with two shard counts (-of-%s and -of-%s): shards of two packs, or of a pack resized; keep one pack's", first, f, proto.total, n.total)
		}
		if i, err := strconv.Atoi(n.index); err == nil && i < total {
			have[i] = true
		} else {
			return nil, 0, proto, fmt.Errorf("%s: shard %s of %s: an index past the shard count", f, n.index, n.total)
		}
	}
	if first == "" || len(have) == total {
		return nil, total, proto, nil
	}
	width := len(proto.index)
	for i := 0; i < total && len(missing) < total-len(have); i++ {
		if !have[i] {
			missing = append(missing, fmt.Sprintf("%s-%0*d-of-%s%s", proto.split, width, i, proto.total, proto.ext))
		}
	}
	return missing, total, proto, nil
}

// checkComplete is missingShards as Open's error: where names the
// directory or URL, split the split.
func checkComplete(where, split string, files []string) error {
	missing, total, proto, err := missingShards(files)
	if err != nil || len(missing) == 0 {
		return err
	}
	return fmt.Errorf("%s: split %q: %d of %d shards missing (%s): its shards' names say -of-%s; copy the missing shards in, or read the shards there are as paths (a glob: %s)",
		where, split, len(missing), total, listNames(missing), proto.total, path.Join(filepath.ToSlash(where), proto.split+"-*"))
}

// listNames joins names, the first maxListed, then how many more.
func listNames(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
}

// bySplitName groups files by the split their names carry ("" for files
// whose names carry none).
func bySplitName(files []string) map[string][]string {
	g := map[string][]string{}
	for _, f := range files {
		sp := splitOf(path.Base(filepath.ToSlash(f)))
		g[sp] = append(g[sp], f)
	}
	return g
}

// checkMerged refuses the files of a split packed as tasks and not
// merged yet: a part folder (dir/.faster-parts/<split>, see part.go)
// holding a task's files, in the directory of any of files, for the
// split their names carry (or split, for files named for none).
func checkMerged(files []string, split string) error {
	dirs := map[string][]string{} // the splits read from each directory
	for _, f := range files {
		sp := splitOf(filepath.Base(f))
		if sp == "" {
			sp = split
		}
		d := filepath.Dir(f)
		if !slices.Contains(dirs[d], sp) {
			dirs[d] = append(dirs[d], sp)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := mergedSplits(d, dirs[d]); err != nil {
			return err
		}
	}
	return nil
}

// mergedSplits refuses any of splits that dir holds task parts of.
func mergedSplits(dir string, splits []string) error {
	unmerged, err := UnmergedSplits(dir)
	if err != nil {
		return err
	}
	for _, sp := range unmerged {
		for _, want := range splits {
			for _, alias := range append([]string{want}, splitAliases[want]...) {
				if sp == alias {
					return notMerged(dir, sp)
				}
			}
		}
	}
	return nil
}

func notMerged(dir, split string) error {
	return fmt.Errorf("%s: %s", dir, notMergedReason(dir, split))
}

// notMergedReason says a split of dir is packed as tasks, not merged, and
// what to run.
func notMergedReason(dir, split string) string {
	return fmt.Sprintf("split %q was packed as tasks and is not merged: run faster pack --merge %s --split %s (when every task is done; the tasks' parts are in %s)",
		split, dir, split, filepath.Join(dir, PartsDir, split))
}

// fileFormat names the format of a local data file as Open tells it
// (headFormat; "" when it says none).
func fileFormat(p string) string {
	head, _ := readHead(p)
	if f := headFormat(p, head); f != nil {
		return f.name
	}
	return ""
}

// setProblems are Verify's findings on a directory's data files (from
// DataFiles) as a set: per split their names carry, the shards missing
// from -of-N, two shard counts, two formats.
func setProblems(dir string, files []string) []Problem {
	var probs []Problem
	groups := bySplitName(files)
	for _, sp := range slices.Sorted(maps.Keys(groups)) {
		g := groups[sp]
		var first, firstFormat string
		for _, f := range g {
			ff := fileFormat(f)
			if ff == "" {
				continue
			}
			if first == "" {
				first, firstFormat = f, ff
			} else if ff != firstFormat {
				probs = append(probs, Problem{Path: dir, Offset: -1, Reason: fmt.Sprintf("two formats in one split (%q): %s is a %s file, %s a %s file; a dataset reads one", sp, first, firstFormat, f, ff)})
				break
			}
		}
		if sp == "" {
			continue
		}
		missing, total, proto, err := missingShards(g)
		if err != nil {
			probs = append(probs, Problem{Path: dir, Offset: -1, Reason: err.Error()})
			continue
		}
		for _, m := range missing {
			probs = append(probs, Problem{Path: filepath.Join(dir, m), Offset: -1, Reason: fmt.Sprintf("missing: split %q's shards are named -of-%s and %d of %d are missing", sp, proto.total, len(missing), total)})
		}
	}
	return probs
}

// unmergedProblems are Verify's findings on a destination holding task
// parts: one per split not merged.
func unmergedProblems(dir string) []Problem {
	splits, err := UnmergedSplits(dir)
	if err != nil {
		return []Problem{{Path: filepath.Join(dir, PartsDir), Offset: -1, Reason: err.Error()}}
	}
	var probs []Problem
	for _, sp := range splits {
		probs = append(probs, Problem{Path: filepath.Join(dir, PartsDir, sp), Offset: -1, Reason: notMergedReason(dir, sp)})
	}
	return probs
}
