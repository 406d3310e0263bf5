package main

import (
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil || len(c.factors) != 3 || len(c.targets) != 3 || c.pool != 30 || c.recorded != 10 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"-factors", "1.25,0.5"},
		{"-factors", "fast"},
		{"-targets", "podReady,boot"},
		{"-pool", "12", "-recorded", "10"},
		{"-runs", "2"},
	} {
		if _, err := parseFlags(args); err == nil || !strings.Contains(err.Error(), "-") {
			t.Errorf("%v: want an error naming the flag, got %v", args, err)
		}
	}
}
