package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseBenchLine(t *testing.T) {
	out := `goos: linux
pkg: github.com/nodeprint/nodeprint/pkg/run
BenchmarkPipelineOther-2   	  10	 5 ns/op
BenchmarkPipeline-2   	     141	   8391050 ns/op	 2115210 B/op	     337 allocs/op
PASS
`
	got, err := parseBenchLine(out, "BenchmarkPipeline")
	if err != nil {
		t.Fatal(err)
	}
	want := benchLine{n: 141, nsPerOp: 8391050, bytesPerOp: 2115210, allocsPerOp: 337}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(benchLine{})); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if _, err := parseBenchLine("FAIL\n", "BenchmarkPipeline"); err == nil {
		t.Fatal("output without the benchmark's line: want an error")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 2, 3}, 2.5}, {nil, 0}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
