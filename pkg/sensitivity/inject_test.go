package sensitivity

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
)

func staged(podReady, decision, claimReady float64) *fingerprint.Fingerprint {
	p := func(v float64) fingerprint.Percentiles {
		return fingerprint.Percentiles{Count: 3, P50: v, P90: v + 1, P99: v + 1, Max: v + 1}
	}
	return &fingerprint.Fingerprint{Timing: fingerprint.Timing{PodReady: p(podReady), PodScheduled: p(podReady - 0.5), PodDecision: p(decision),
		NodeClaimReady: p(claimReady), NodeClaimLaunch: p(0.1)}}
}

// An injected slower decision delays the candidate's pods, not its
// NodeClaims, by (factor − 1) × the reference's pod-ready; the pool it
// was put into is not changed, and a pool with a lever is refused.
func TestInjectDelaysTheStageAndWhatContainsIt(t *testing.T) {
	pool := Pool{Scenario: "s", Condition: Condition{Name: Unchanged}}
	for _, pr := range []float64{2, 8} { // geometric mean 4
		pool.Pairs = append(pool.Pairs, Pair{Ref: staged(pr, 1, 1.5), Cand: staged(pr, 1, 1.5)})
	}
	in, err := ParseInjection("decide:1.25")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Inject(pool, in)
	if err != nil {
		t.Fatal(err)
	}
	want := staged(2, 1, 1.5)
	for _, p := range []*fingerprint.Percentiles{&want.Timing.PodReady, &want.Timing.PodScheduled, &want.Timing.PodDecision} {
		p.P50, p.P90, p.P99, p.Max = p.P50+1, p.P90+1, p.P99+1, p.Max+1
	}
	if d := cmp.Diff(want, got.Pairs[0].Cand); d != "" {
		t.Errorf("the candidate with a decision 1 s slower (-want +got):\n%s", d)
	}
	if d := cmp.Diff(staged(2, 1, 1.5), pool.Pairs[0].Cand); d != "" {
		t.Errorf("the pool injected into changed (-want +got):\n%s", d)
	}
	if d := cmp.Diff(staged(2, 1, 1.5), got.Pairs[0].Ref); d != "" {
		t.Errorf("the reference changed (-want +got):\n%s", d)
	}
	if r := realized(got.Pairs, in.Stage.Target); math.Abs(r-math.Sqrt(1.5*1.125)) > 1e-9 {
		t.Errorf("realized %v, want the geometric mean of 3/2 and 9/8", r)
	}
	if got.Condition.Name != "decide ×1.25, injected into unchanged" || got.Condition.Target != "timing.podReady.p50" {
		t.Errorf("condition %+v", got.Condition)
	}
	if _, err := Inject(got, in); err == nil || !strings.Contains(err.Error(), "A/A pool") {
		t.Errorf("injecting into a lever's pool: %v, want refused", err)
	}
	for _, bad := range []string{"decide", "decide:1", "stall:1.25", "launch:x"} {
		if _, err := ParseInjection(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
