//go:build !linux

package testbin

import "os/exec"

// SetDeathSignal does nothing here: only Linux has a parent-death signal.
func SetDeathSignal(cmd *exec.Cmd) {}
