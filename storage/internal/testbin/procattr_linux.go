package testbin

import (
	"os/exec"
	"syscall"
)

// SetDeathSignal kills the test server if the test binary dies first.
func SetDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
