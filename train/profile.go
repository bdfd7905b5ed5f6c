package train

// StepProfiler is implemented by backends that can time each call the
// steps queue on their device (cuda: CUDA events around every kernel,
// convolution, product and copy): where a step's device time goes, and
// how long the device idles between calls (launch gaps, host work).
// Between StartProfile and StopProfile the steps run eagerly (a
// StepCapturer captures none) and cost the events' host time.
type StepProfiler interface {
	StartProfile() error
	// StopProfile waits for the queued work and returns what the calls
	// since StartProfile took.
	StopProfile() (DeviceProfile, error)
}

// DeviceProfile is what a StepProfiler measured: its rows by device time,
// largest first, and the totals.
type DeviceProfile struct {
	Rows  []ProfileRow `json:"rows"`
	Calls int          `json:"calls"`
	// BusyMs is the device time of the calls; GapMs the device's idle
	// time between them (from the first call's start to the last's end,
	// less BusyMs).
	BusyMs float64 `json:"busy_ms"`
	GapMs  float64 `json:"idle_ms"`
}

// ProfileRow is one kind of call: Op names it ("kernel sgd_lr",
// "conv 512x3x32x32 -> 64 k3 s1 p1 forward", "gemm 512x10x256",
// "copy in", "memset"), Kind groups it (kernel, conv, gemm, copy,
// memset); Ms is its device time, summed over Calls.
type ProfileRow struct {
	Op    string  `json:"op"`
	Kind  string  `json:"kind"`
	Calls int     `json:"calls"`
	Ms    float64 `json:"ms"`
}
