//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn

// ForgetSharedChoices empties the process's shared tuning choices, so that
// a test's next backend tunes (or reads its TuneCache) as a new process's
// would.
func ForgetSharedChoices() {
	shared.Lock()
	defer shared.Unlock()
	shared.chosen = map[string]sharedChoice{}
}
