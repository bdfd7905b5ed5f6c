package shard

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxSplitName is the longest split name, in bytes: its shard names are
// 24 bytes longer and stay within a file name's 255.
const MaxSplitName = 128

// CheckSplitName reports why name cannot name a split (nil if it can).
// A split name becomes a file name prefix and a folder under PartsDir, so
// it must be a plain name: not empty, not "." or ".." (a folder: a merge
// of split ".." once removed the whole destination), no path separator,
// no control character, valid UTF-8 (manifest.json records the shards'
// names as JSON strings), at most MaxSplitName bytes. Pack, MergeParts
// and the CLI's --split check it, before anything is written or removed.
func CheckSplitName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "it is empty"
	case name == "." || name == "..":
		why = "it names a folder"
	case strings.ContainsAny(name, `/\`):
		why = "it holds a path separator"
	case !utf8.ValidString(name):
		why = "it is not valid UTF-8"
	case strings.ContainsFunc(name, unicode.IsControl):
		why = "it holds a control character"
	case len(name) > MaxSplitName:
		why = fmt.Sprintf("it is %d bytes, above %d", len(name), MaxSplitName)
	default:
		return nil
	}
	return fmt.Errorf("split name %q must be a plain name: %s", name, why)
}
