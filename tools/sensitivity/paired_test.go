package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/sensitivity"
)

func TestAttemptPoolStartsAPoolOverWhenItsEnvironmentFails(t *testing.T) {
	envErr := fmt.Errorf("burst-1000, decide, block 6: %w", &run.EnvironmentError{Run: "r6", Down: []string{"kube-scheduler"}})
	partial := sensitivity.Pool{Scenario: "burst-1000", Pairs: make([]sensitivity.Pair, 5)}
	whole := sensitivity.Pool{Scenario: "burst-1000", Pairs: make([]sensitivity.Pair, 16)}
	other := errors.New("the scenario does not validate")
	for _, tc := range []struct {
		name    string
		results []error // one per attempt the pool makes
		ctxDone bool
		wantOK  bool
		wantErr error
		kept    int
	}{
		{name: "first attempt passes", results: []error{nil}, wantOK: true},
		{name: "environment fails once, then passes", results: []error{envErr, nil}, wantOK: true, kept: 1},
		{name: "environment fails every time", results: []error{envErr, envErr}, kept: 2},
		{name: "another error ends the run", results: []error{other}, wantErr: other},
		{name: "an environment failure after Ctrl-C ends the run", results: []error{envErr}, ctxDone: true, wantErr: envErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.ctxDone {
				cancel()
			}
			calls := 0
			var kept []stoppedPool
			p, ok, err := attemptPool(ctx, 2, func() (sensitivity.Pool, error) {
				err := tc.results[calls]
				calls++
				if err != nil {
					return partial, err
				}
				return whole, nil
			}, func(sp stoppedPool) error { kept = append(kept, sp); return nil })
			if ok != tc.wantOK || !errors.Is(err, tc.wantErr) {
				t.Fatalf("ok %v, err %v; want %v, %v", ok, err, tc.wantOK, tc.wantErr)
			}
			if calls != len(tc.results) {
				t.Errorf("the pool ran %d times, want %d", calls, len(tc.results))
			}
			if ok && len(p.Pairs) != len(whole.Pairs) {
				t.Errorf("returned %d blocks, want the whole pool's %d", len(p.Pairs), len(whole.Pairs))
			}
			if len(kept) != tc.kept {
				t.Fatalf("kept %d stopped pools, want %d", len(kept), tc.kept)
			}
			for _, sp := range kept {
				if diff := cmp.Diff(stoppedPool{Pool: partial, Reason: envErr.Error()}, sp); diff != "" {
					t.Errorf("kept (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// A lever sized from the pilot runs slows this machine's reference by the
// factor, whatever the baseline's machine read.
func TestResizeSizesTheLeversFromThePilotRuns(t *testing.T) {
	base := &fingerprint.Baseline{Timing: fingerprint.BaselineTiming{
		PodReadyP50:       fingerprint.Samples{Values: []float64{2}},
		NodeClaimReadyP50: fingerprint.Samples{Values: []float64{2}},
	}}
	specs := []string{"unchanged", "launch:1.25", "decide:1.5"}
	cds, err := sizeConditions(specs, base)
	if err != nil {
		t.Fatal(err)
	}
	e := experiment{s: &scenario.Scenario{}, conditions: cds}
	var fps []*fingerprint.Fingerprint
	for _, v := range []float64{3.8, 4, 4.4} {
		fp := &fingerprint.Fingerprint{}
		fp.Timing.NodeClaimReady.P50, fp.Timing.PodReady.P50 = v, v/2
		fp.Timing.NodeClaimReady.Count, fp.Timing.PodReady.Count = 1, 10
		fps = append(fps, fp)
	}
	got, err := resize(e, specs, fps)
	if err != nil {
		t.Fatal(err)
	}
	want := []sensitivity.Lever{{}, {LaunchDelay: time.Second}, {DecisionDelay: time.Second}}
	var levers []sensitivity.Lever
	for _, cd := range got.conditions {
		levers = append(levers, cd.Lever)
	}
	if diff := cmp.Diff(want, levers); diff != "" {
		t.Errorf("levers (-want +got):\n%s", diff)
	}
	if !sizedByMedian(e) || sizedByMedian(experiment{conditions: e.conditions[:1]}) {
		t.Error("sizedByMedian: want true for a launch lever, false for the A/A condition alone")
	}
}
