// Package registry holds named implementations that packages register from
// their init functions (compute backends, collective libraries), as
// database/sql does for drivers.
package registry

import (
	"sort"
	"sync"
)

// Registry maps names to values. The zero value is empty and ready; it is
// safe for concurrent use.
type Registry[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// Register makes v available under name, replacing any earlier one.
func (r *Registry[T]) Register(name string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]T{}
	}
	r.m[name] = v
}

// Get returns the value registered as name.
func (r *Registry[T]) Get(name string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[name]
	return v, ok
}

// Names lists the registered names, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
