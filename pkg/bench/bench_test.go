package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The sampler reads this very process: it has a resident set and, after
// some work, CPU time.
func TestSamplerReadsThisProcess(t *testing.T) {
	pid := os.Getpid()
	s := NewSampler(map[string]int{"self": pid, "gone": 1 << 30}, 10*time.Millisecond)
	s.Start(context.Background())
	buf := make([]byte, 64<<20) // 64 MiB touched: the peak must see it
	for i := range buf {
		buf[i] = byte(i)
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	n := 0
	for time.Now().Before(deadline) {
		n++
	}
	u := s.Stop()
	if u["self"].PeakRSSBytes < 64<<20 {
		t.Errorf("peak RSS %d bytes, want at least the 64 MiB just touched", u["self"].PeakRSSBytes)
	}
	if u["self"].CPUSeconds <= 0 {
		t.Errorf("CPU seconds %v after a busy loop of %d iterations, want > 0", u["self"].CPUSeconds, n)
	}
	if u["gone"] != (Usage{}) {
		t.Errorf("a process that does not exist: %+v, want zero usage", u["gone"])
	}
	_ = buf[len(buf)-1]
}

func TestTableShowsTargetsAndMisses(t *testing.T) {
	r := &Report{}
	r.AddTarget("start", "cluster up to Karpenter healthy", 9, "s", 6, "bounded by kube-apiserver start")
	r.AddTarget("scale-1000", "time to all Running", 20, "s", 25, "")
	r.Add("floor", "wall / floor", 1.8, "×", "")
	var b bytes.Buffer
	if err := r.Table(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"9.00s", "6.00s", "1.50×", "NO", "0.80×", "yes", "bounded by kube-apiserver start"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if m := r.Missed(); len(m) != 1 || m[0].Group != "start" {
		t.Errorf("Missed() = %+v, want the start figure only", m)
	}
}
