package collective

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts is the most hosts a hostlist may name: more machines than any
// cluster has (the largest have some 160,000 nodes). A list naming more is
// refused when it is parsed, before anything is sized by it.
const MaxHosts = 1 << 20

// maxRange is the most hosts one range in brackets may name: Slurm's own
// limit (hostlist.c's MAX_RANGE, "Too many hosts in range").
const maxRange = 1 << 16

// Hostlist is a parsed Slurm hostlist ("node[01-03,07],gpu-a[1-2]"). Its
// names are computed from their index, never all expanded: the first host
// of a list naming a million costs the list's length.
type Hostlist struct {
	items []hostItem
	n     int // hosts, 1 … MaxHosts
}

// hostItem is one comma-separated name of a list: literal text around
// bracket groups, the last group varying fastest ("r[1-2]n[8-9]": r1n8
// r1n9 r2n8 r2n9).
type hostItem struct {
	lits   []string // len(groups)+1 pieces of text around the groups
	groups []hostGroup
	n      int // hosts: the product of the groups' sizes
}

// hostGroup is the ranges of one pair of brackets, in order.
type hostGroup struct {
	ranges []hostRange
	n      int // the sum of the ranges' sizes
}

// hostRange is lo, lo+1, … lo+n-1, each zero-padded to width digits.
type hostRange struct{ lo, n, width int }

// ParseHostlist parses Slurm's hostlist syntax, as `scontrol show
// hostnames` reads it: ranges keep their zero padding; several bracket
// groups in one name multiply. A range of more than 65,536 hosts (Slurm's
// limit) or a list of more than MaxHosts is an error.
func ParseHostlist(list string) (Hostlist, error) {
	h, err := parseHostlist(list)
	if err != nil {
		return Hostlist{}, fmt.Errorf("collective: hostlist %q: %w", list, err)
	}
	return h, nil
}

// Len is the number of hosts the list names.
func (h Hostlist) Len() int { return h.n }

// Host is the i-th host of the list (0 <= i < Len()), in the order
// `scontrol show hostnames` prints them.
func (h Hostlist) Host(i int) string {
	if i < 0 || i >= h.n {
		panic(fmt.Sprintf("collective: host %d of a hostlist of %d", i, h.n))
	}
	for _, it := range h.items {
		if i < it.n {
			return it.host(i)
		}
		i -= it.n
	}
	panic("unreachable")
}

// ExpandHostlist returns every host of list (see ParseHostlist), at most
// MaxHosts of them: "node[01-03,07],gpu-a[1-2]" is node01 node02 node03
// node07 gpu-a1 gpu-a2.
func ExpandHostlist(list string) ([]string, error) {
	h, err := ParseHostlist(list)
	if err != nil {
		return nil, err
	}
	hosts := make([]string, 0, h.n)
	for _, it := range h.items {
		for j := range it.n {
			hosts = append(hosts, it.host(j))
		}
	}
	return hosts, nil
}

// parseHostlist is ParseHostlist with errors that do not repeat the list.
func parseHostlist(list string) (Hostlist, error) {
	var h Hostlist
	depth, start := 0, 0
	for i := 0; i <= len(list); i++ {
		if i < len(list) {
			switch list[i] {
			case '[':
				depth++
				if depth > 1 {
					return Hostlist{}, errors.New("nested brackets")
				}
				continue
			case ']':
				depth--
				if depth < 0 {
					return Hostlist{}, errors.New("unbalanced brackets")
				}
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		if depth != 0 {
			return Hostlist{}, errors.New("unbalanced brackets")
		}
		if item := strings.TrimSpace(list[start:i]); item != "" {
			it, err := parseHostItem(item)
			if err != nil {
				return Hostlist{}, err
			}
			h.items = append(h.items, it)
			if h.n += it.n; h.n > MaxHosts {
				return Hostlist{}, fmt.Errorf("names more than %d hosts", MaxHosts)
			}
		}
		start = i + 1
	}
	if h.n == 0 {
		return Hostlist{}, errors.New("no host")
	}
	return h, nil
}

// parseHostItem parses one name of a list, its brackets balanced and not
// nested (parseHostlist checked).
func parseHostItem(item string) (hostItem, error) {
	it := hostItem{n: 1}
	rest := item
	for {
		open := strings.IndexByte(rest, '[')
		if open < 0 {
			it.lits = append(it.lits, rest)
			return it, nil
		}
		end := open + strings.IndexByte(rest[open:], ']')
		it.lits = append(it.lits, rest[:open])
		var g hostGroup
		for _, r := range strings.Split(rest[open+1:end], ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || a < 0 || b < a || lo == "" {
				return hostItem{}, fmt.Errorf("bad range %q", r)
			}
			if b-a >= maxRange {
				return hostItem{}, fmt.Errorf("range %q: more than %d hosts (Slurm's limit)", r, maxRange)
			}
			g.ranges = append(g.ranges, hostRange{lo: a, n: b - a + 1, width: len(lo)})
			if g.n += b - a + 1; g.n > MaxHosts {
				return hostItem{}, fmt.Errorf("%q names more than %d hosts", item, MaxHosts)
			}
		}
		// it.n <= MaxHosts and g.n <= MaxHosts: the product fits an int.
		if it.n *= g.n; it.n > MaxHosts {
			return hostItem{}, fmt.Errorf("%q names more than %d hosts", item, MaxHosts)
		}
		it.groups = append(it.groups, g)
		rest = rest[end+1:]
	}
}

// host is the item's j-th host (0 <= j < it.n): j's digits in the mixed
// radix of the groups' sizes, the last group the fastest.
func (it hostItem) host(j int) string {
	digits := make([]int, len(it.groups))
	for g := len(it.groups) - 1; g >= 0; g-- {
		digits[g] = j % it.groups[g].n
		j /= it.groups[g].n
	}
	var b strings.Builder
	for g, grp := range it.groups {
		b.WriteString(it.lits[g])
		d := digits[g]
		for _, r := range grp.ranges {
			if d < r.n {
				b.WriteString(fmt.Sprintf("%0*d", r.width, r.lo+d))
				break
			}
			d -= r.n
		}
	}
	b.WriteString(it.lits[len(it.groups)])
	return b.String()
}
