//go:build !unix

package source

import "os"

func openNonblock(path string) (*os.File, error) { return os.Open(path) }
func clearNonblock(*os.File) error               { return nil }
func isLinkError(error) bool                     { return false }

// statStamp has nothing to add to a FileStamp here.
func statStamp(os.FileInfo) string { return "" }
