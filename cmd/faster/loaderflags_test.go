package main

import "testing"

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "4k": 4 << 10, "4K": 4 << 10, "3M": 3 << 20, "50G": 50 << 30, "50GiB": 50 << 30, "2T": 2 << 40} {
		var s sizeFlag
		if err := s.Set(in); err != nil || int64(s) != want {
			t.Errorf("%q: %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "G", "-1G", "0", "1.5G", "9999999999T", "12X"} {
		var s sizeFlag
		if err := s.Set(in); err == nil {
			t.Errorf("%q: accepted as %d", in, s)
		}
	}
}
