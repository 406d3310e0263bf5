package verify

import (
	"context"
	"fmt"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// FaultResult is a fault scenario's clean run, faulted run and verdict.
type FaultResult struct {
	Scenario *scenario.Scenario
	// Clean is the run without the fault, the faulted run's reference.
	Clean   *run.Result
	Faulted *run.Result
	// CleanFingerprint aggregates the clean run as a baseline.
	CleanFingerprint *fingerprint.Baseline
	Diff             *diff.Diff
	Verdict          *attribute.Verdict
}

// Fault runs a fault scenario: once clean (its baseline), once with the
// fault injected, and classifies the faulted run against the clean one.
// The options act on the runs as run.Run's do: run.WhileClean on the
// clean run, run.OnInject and run.WhileFaulted on the faulted one.
func (j *Judge) Fault(ctx context.Context, s *scenario.Scenario, opts ...run.FaultOption) (*FaultResult, error) {
	if s.Spec.Fault == nil {
		return nil, fmt.Errorf("scenario %s has no fault block", s.Metadata.Name)
	}
	clean := *s
	clean.Spec.Fault = nil
	j.progress(fmt.Sprintf("scenario %s: baseline run (no fault)", s.Metadata.Name))
	base, err := j.runner.Run(ctx, &clean, opts...)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: baseline run: %w", s.Metadata.Name, err)
	}
	bl, err := fingerprint.NewBaseline(s.Metadata.Name, fingerprint.Provenance{}, []*fingerprint.Fingerprint{base.Fingerprint})
	if err != nil {
		return nil, err
	}
	j.progress(fmt.Sprintf("scenario %s: faulted run (%s)", s.Metadata.Name, s.Spec.Fault.Name))
	faulted, err := j.runner.Run(ctx, s, opts...)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: faulted run: %w", s.Metadata.Name, err)
	}
	res := &FaultResult{Scenario: s, Clean: base, Faulted: faulted, CleanFingerprint: bl}
	res.Diff, res.Verdict, err = Attribute(s, faulted, bl, base.Inputs)
	if err != nil {
		return nil, err
	}
	j.progress(fmt.Sprintf("scenario %s: %s", s.Metadata.Name, res.Verdict.Summary()))
	return res, nil
}
