package fit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/faster-training/faster/train"
)

// DeviceLogEvery is Config.LogEvery's default on a device other than the
// cpu: the training loss is read (the device synchronised for it) once
// per this many steps.
const DeviceLogEvery = 20

// ParseDevice checks a device's name, ModelConfig.Device: "" and "cpu"
// (the host), "cuda" (the first GPU, cuda:0) or "cuda:N"; it returns the
// name as the backend is given it ("cpu", "cuda:N").
func ParseDevice(s string) (string, error) {
	switch s {
	case "", "cpu":
		return "cpu", nil
	case "cuda":
		return "cuda:0", nil
	}
	if n, ok := strings.CutPrefix(s, "cuda:"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < 1<<16 && strconv.Itoa(i) == n {
			return s, nil
		}
	}
	return "", fmt.Errorf("%q: want cpu, cuda or cuda:N (N the GPU's index)", s)
}

// isCUDA reports whether device (ParseDevice's) is a GPU.
func isCUDA(device string) bool { return strings.HasPrefix(device, "cuda") }

// backendFor is the backend a run opens on device: Backend when given,
// else cuda on a GPU, else "" (train.Default).
func (m ModelConfig) backendFor(device string) string {
	if m.Backend == "" && isCUDA(device) {
		return "cuda"
	}
	return m.Backend
}

// openBackend opens the run's backend (name "": train.Default) on o's
// device with open (nil: train.Open), each failure naming the device and
// the backend: a backend not in this build or not running on the device
// is a ConfigError of model.device (model.backend when the device is
// the cpu); a device that cannot be opened (no driver) is not.
func openBackend(open func(string, train.BackendOptions) (train.Backend, error), name string, o train.BackendOptions) (train.Backend, error) {
	if open == nil {
		open = train.Open
		if name == "" {
			open = func(string, train.BackendOptions) (train.Backend, error) { return train.Default(o) }
		}
	}
	b, err := open(name, o)
	if err == nil {
		return b, nil
	}
	if o.Device == "cpu" {
		if errors.Is(err, train.ErrNoBackend) {
			return nil, configErrorf("model.backend", "%v", err)
		}
		return nil, err
	}
	switch {
	case errors.Is(err, train.ErrNoBackend):
		return nil, configErrorf("model.device", "%s: backend %q is not in this build (have %v): build with the cuda backend, or train on the cpu", o.Device, name, train.Backends())
	case errors.Is(err, train.ErrDevice):
		return nil, configErrorf("model.device", "%s: %v", o.Device, err) // names the backend
	}
	return nil, fmt.Errorf("device %s: backend %q: %w", o.Device, name, err)
}
