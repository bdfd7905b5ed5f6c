//go:build !linux

package bench

func syncFS() {}
