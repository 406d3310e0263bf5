package main

import (
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil || !c.paired || len(c.conditions) != 10 || c.pairs != 20 || c.maxPairs != 16 || len(c.injections) != 2 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"-method", "recorded"})
	if err != nil || c.paired || len(c.factors) != 3 || len(c.targets) != 3 || c.pool != 30 || c.recorded != 10 {
		t.Fatalf("-method recorded's defaults: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"-method", "bayes"},
		{"-conditions", "unchanged,launch:0.9"},
		{"-conditions", "boot:1.5"},
		{"-conditions", "cpu"},
		{"-pairs", "4"},
		{"-inject", "decide:0.8"},
		{"-inject", "boot:1.25"},
		{"-max-pairs", "100"},
		{"-method", "recorded", "-factors", "1.25,0.5"},
		{"-method", "recorded", "-factors", "fast"},
		{"-method", "recorded", "-targets", "podReady,boot"},
		{"-method", "recorded", "-pool", "12", "-recorded", "10"},
		{"-method", "recorded", "-runs", "2"},
	} {
		if _, err := parseFlags(args); err == nil || !strings.Contains(err.Error(), "-") {
			t.Errorf("%v: want an error naming the flag, got %v", args, err)
		}
	}
}
