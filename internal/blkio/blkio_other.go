//go:build !linux

package blkio

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
)

// Group is one throttled cgroup (Linux only).
type Group struct{}

func unavailable() error { return fmt.Errorf("%w: %s has no cgroups", ErrUnavailable, runtime.GOOS) }

// Available reports why throttling is unavailable here.
func Available() error { return unavailable() }

// NewGroup fails: Linux only.
func NewGroup(string) (*Group, error) { return nil, unavailable() }

// Dir returns "".
func (g *Group) Dir() string { return "" }

// Limit fails: Linux only.
func (g *Group) Limit(string, Limits) error { return unavailable() }

// Command runs name unthrottled.
func (g *Group) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}

// Stats fails: Linux only.
func (g *Group) Stats(string) (Stats, error) { return Stats{}, unavailable() }

// Remove does nothing.
func (g *Group) Remove() error { return nil }

// DeviceOf fails: Linux only.
func DeviceOf(string) (string, error) { return "", unavailable() }

// DropCaches fails: Linux only.
func DropCaches() error { return unavailable() }

// Evict fails: Linux only.
func Evict(string) (int64, error) { return 0, unavailable() }
