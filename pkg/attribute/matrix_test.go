package attribute

import (
	"strings"
	"testing"
)

func TestMatrixCountsOffDiagonal(t *testing.T) {
	m := NewMatrix()
	m.Add("slow-boot", "L1", &Verdict{Verdict: L1Infrastructure, Layer: "L1", Rule: "L1-slow-boot"})
	m.Add("slow-boot", "L1", &Verdict{Verdict: L1Infrastructure, Layer: "L1", Rule: "L1-slow-boot"})
	m.Add("memory-leak-hpa", "L3", &Verdict{Verdict: L2Orchestration, Layer: "L2", Rule: "L2-disruption-churn"})
	m.Add("crash-loop", "L3", &Verdict{Verdict: Inconclusive})
	m.Add("crash-loop", "L3", nil)
	if m.Runs != 5 || m.OffDiagonal() != 3 || m.Errors != 1 {
		t.Fatalf("runs %d, off-diagonal %d, errors %d; want 5, 3, 1", m.Runs, m.OffDiagonal(), m.Errors)
	}
	var b strings.Builder
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"L1-slow-boot×2", "L2-disruption-churn×1", "(inconclusive)×1", "(error)×1", "3 off the diagonal"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
