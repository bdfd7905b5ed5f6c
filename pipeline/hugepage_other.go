//go:build !linux

package pipeline

// adviseHuge does nothing where transparent huge pages are not asked for.
func adviseHuge([]byte) {}
