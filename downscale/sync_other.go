//go:build !linux

package downscale

// syncFS is a no-op where there is no syncfs(2): use Options.Sync for
// durable outputs there.
func syncFS(dir string) error { return nil }
