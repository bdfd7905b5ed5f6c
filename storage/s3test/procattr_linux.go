package s3test

import (
	"os/exec"
	"syscall"
)

// setDeathSignal kills the test server if the test binary dies first.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
