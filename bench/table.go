package bench

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Table writes rows as a markdown table with aligned columns, like the
// seed's README tables.
func Table(w io.Writer, header []string, rows [][]string) error {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(c))
			}
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		b.WriteString("|")
		for i := range header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)))
		}
		return b.String() + "\n"
	}
	var b strings.Builder
	b.WriteString(line(header))
	b.WriteString("|")
	for _, n := range width {
		b.WriteString(strings.Repeat("-", n+2) + "|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString(line(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
