package lang

import "testing"

func TestKnownIsExactlyAll(t *testing.T) {
	for _, l := range All {
		if !Known(l) {
			t.Errorf("%q is in All but not known", l)
		}
	}
	for _, l := range []string{"", "EN", "fr", "zh-CN"} {
		if Known(l) {
			t.Errorf("%q is known, want only %v", l, All)
		}
	}
}
