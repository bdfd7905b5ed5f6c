package dl

import (
	"slices"
	"testing"
	"unsafe"
)

// fakeLib is a library of the fake opener: its symbols, and whether
// the loader closed it.
type fakeLib struct {
	syms   map[string]unsafe.Pointer
	closed bool
}

func (f *fakeLib) sym(name string) unsafe.Pointer { return f.syms[name] }
func (f *fakeLib) close()                         { f.closed = true }

// fakeTable is a Table over Go memory: names[i] of library libs[i] into
// slots[i].
type fakeTable struct {
	names []string
	libs  []int
	slots []unsafe.Pointer
}

func (ft *fakeTable) table(i int) (string, int, *unsafe.Pointer, bool) {
	if i >= len(ft.names) {
		return "", 0, nil, false
	}
	return ft.names[i], ft.libs[i], &ft.slots[i], true
}

type lib3 int

// The loader tries each soname in order, takes the first with every symbol,
// reports each try, and keeps none of a library that lacks a symbol.
func TestLoadFake(t *testing.T) {
	var fa, fb, fc, fd int // addresses standing for functions
	a, b, c, d := unsafe.Pointer(&fa), unsafe.Pointer(&fb), unsafe.Pointer(&fc), unsafe.Pointer(&fd)
	libs := map[string]*fakeLib{
		// library 0: the .13 is absent, the .12 complete
		"libzero.so.12": {syms: map[string]unsafe.Pointer{"zeroA": a, "zeroB": b}},
		// library 1: its only soname lacks oneB and oneC
		"libone.so.1": {syms: map[string]unsafe.Pointer{"oneA": c}},
		// library 2: opens with its one symbol
		"libtwo.so.2": {syms: map[string]unsafe.Pointer{"twoA": d}},
	}
	open := func(so string) (handle, string) {
		if l, ok := libs[so]; ok {
			return l, ""
		}
		if so == "libsilent.so.1" {
			return nil, "" // dlopen failed and dlerror said nothing
		}
		return nil, so + ": cannot open shared object file: No such file or directory"
	}
	ft := &fakeTable{
		names: []string{"zeroA", "oneA", "oneB", "zeroB", "oneC", "twoA"},
		libs:  []int{0, 1, 1, 0, 1, 2},
		slots: make([]unsafe.Pointer, 6),
	}
	sonames := [][]string{
		{"libzero.so.13", "libzero.so.12"},
		{"libone.so.1"},
		{"libsilent.so.1", "libtwo.so.2", "libtwo.so.1"},
		{}, // a library with no soname never opens
	}
	attempts, opened := load[Attempt[lib3]](len(sonames), func(l int) []string { return sonames[l] }, ft.table, nil, open)
	want := []Attempt[lib3]{
		{0, "libzero.so.13", "libzero.so.13: cannot open shared object file: No such file or directory"},
		{0, "libzero.so.12", ""},
		{1, "libone.so.1", "oneB missing; oneC missing"},
		{2, "libsilent.so.1", "dlopen failed"},
		{2, "libtwo.so.2", ""},
	}
	if !slices.Equal(attempts, want) {
		t.Errorf("attempts\n%v\nwant\n%v", attempts, want)
	}
	if w := []bool{true, false, true, false}; !slices.Equal(opened, w) {
		t.Errorf("opened %v, want %v", opened, w)
	}
	if w := []unsafe.Pointer{a, nil, nil, b, nil, d}; !slices.Equal(ft.slots, w) {
		t.Errorf("slots %v, want %v (library 1 lacks symbols: none of it kept)", ft.slots, w)
	}
	if !libs["libone.so.1"].closed || libs["libzero.so.12"].closed || libs["libtwo.so.2"].closed {
		t.Error("want only the library lacking symbols closed")
	}
	names, ls, ok := Symbols[lib3](ft.table)
	if !slices.Equal(names, ft.names) || !slices.Equal(ls, []lib3{0, 1, 1, 0, 1, 2}) || !slices.Equal(ok, []bool{true, false, false, true, false, true}) {
		t.Errorf("Symbols = %v %v %v", names, ls, ok)
	}
}

// A soname that lacks a symbol after an earlier one resolved it clears
// the slot: the library is whole or absent.
func TestLoadFakeRetryClears(t *testing.T) {
	var fx int
	x := unsafe.Pointer(&fx)
	calls := 0
	open := func(so string) (handle, string) {
		calls++
		return &fakeLib{syms: map[string]unsafe.Pointer{"first": x}}, ""
	}
	ft := &fakeTable{names: []string{"first", "second"}, libs: []int{0, 0}, slots: make([]unsafe.Pointer, 2)}
	attempts, opened := load[Attempt[lib3]](1, func(int) []string { return []string{"liba.so.2", "liba.so.1"} }, ft.table, nil, open)
	if calls != 2 || len(attempts) != 2 || opened[0] {
		t.Fatalf("calls %d, attempts %v, opened %v", calls, attempts, opened)
	}
	for _, a := range attempts {
		if a.Err != "second missing" {
			t.Errorf("%s: %q, want \"second missing\"", a.Soname, a.Err)
		}
	}
	if ft.slots[0] != nil || ft.slots[1] != nil {
		t.Errorf("slots %v: want none kept", ft.slots)
	}
}

// A Set opens once: later calls, from any goroutine, get what the first
// found without trying again.
func TestSetOpensOnce(t *testing.T) {
	var fx int
	calls := 0
	ft := &fakeTable{names: []string{"f"}, libs: []int{1}, slots: make([]unsafe.Pointer, 1)}
	set := &Set[Attempt[lib3], lib3]{N: 2, Sonames: func(l int) []string { return []string{"lib" + string(rune('a'+l)) + ".so.1"} }, Table: ft.table}
	open := func(so string) (handle, string) {
		calls++
		return &fakeLib{syms: map[string]unsafe.Pointer{"f": unsafe.Pointer(&fx)}}, ""
	}
	set.once.Do(func() { set.attempts, set.opened = load[Attempt[lib3]](set.N, set.Sonames, set.Table, set.Names, open) })
	done := make(chan bool)
	for range 4 {
		go func() { done <- set.Opened(1) && set.Opened(0) }()
	}
	for range 4 {
		if !<-done {
			t.Error("a library did not open")
		}
	}
	a, _ := set.Open()
	if calls != 2 || len(a) != 2 || a[1].Soname != "libb.so.1" || ft.slots[0] != unsafe.Pointer(&fx) {
		t.Errorf("calls %d, attempts %v, slot %p", calls, a, ft.slots[0])
	}
}

// A symbol with other names (Set.Names) resolves from the first of them
// the library exports: the renamed one where it is, the old one where
// not; a library with neither is missing it, both names said.
func TestLoadFakeNames(t *testing.T) {
	var fo, fv int
	old, v2 := unsafe.Pointer(&fo), unsafe.Pointer(&fv)
	libs := map[string]*fakeLib{
		"libnew.so.1":  {syms: map[string]unsafe.Pointer{"elapsed": old, "elapsed_v2": v2, "init": old}},
		"libold.so.1":  {syms: map[string]unsafe.Pointer{"elapsed": old, "init": old}},
		"libnone.so.1": {syms: map[string]unsafe.Pointer{"init": old}},
	}
	open := func(so string) (handle, string) { return libs[so], "" }
	names := func(s string) []string {
		if s == "elapsed" {
			return []string{"elapsed_v2", "elapsed"}
		}
		return nil
	}
	for so, want := range map[string]unsafe.Pointer{"libnew.so.1": v2, "libold.so.1": old, "libnone.so.1": nil} {
		ft := &fakeTable{names: []string{"init", "elapsed"}, libs: []int{0, 0}, slots: make([]unsafe.Pointer, 2)}
		attempts, _ := load[Attempt[lib3]](1, func(int) []string { return []string{so} }, ft.table, names, open)
		wantErr := ""
		if want == nil {
			wantErr = "elapsed_v2 or elapsed missing"
		}
		if ft.slots[1] != want || len(attempts) != 1 || attempts[0].Err != wantErr {
			t.Errorf("%s: slot %p (want %p), attempts %v (want %q)", so, ft.slots[1], want, attempts, wantErr)
		}
	}
}
