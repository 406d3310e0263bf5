package sensitivity

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/permtest"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Lever is a Karpenter build that regresses by a known amount: the pinned
// release with fixtures/sensitivity/levers.patch filled in. The zero Lever
// regresses nothing: the A/A conditions, whose candidate make sensitivity
// runs from the pinned build itself.
type Lever struct {
	// LaunchDelay is added to every launch (the KWOK provider's Create).
	LaunchDelay time.Duration `json:"launchDelay,omitempty"`
	// DecisionDelay is added to every scheduling decision (the
	// provisioner's Schedule): pods wait longer for their NodeClaim.
	DecisionDelay time.Duration `json:"decisionDelay,omitempty"`
	// CPUFactor multiplies the CPU the process uses (0 or 1: unchanged).
	CPUFactor float64 `json:"cpuFactor,omitempty"`
	// MemoryMiB is held resident from start-up, outside Go's heap: every
	// peak of the process's resident set is that much higher.
	MemoryMiB int `json:"memoryMiB,omitempty"`
}

// Placeholders of the levers patch.
const (
	launchPlaceholder   = "{{LAUNCH_DELAY_MS}}"
	decisionPlaceholder = "{{DECISION_DELAY_MS}}"
	cpuPlaceholder      = "{{CPU_FACTOR}}"
	memoryPlaceholder   = "{{MEMORY_MIB}}"
)

// Patch fills the levers patch's placeholders with l's values; a template
// that lacks one is refused (it would build a lever that does nothing).
func (l Lever) Patch(template string) (string, error) {
	r := []string{
		launchPlaceholder, strconv.FormatInt(l.LaunchDelay.Milliseconds(), 10),
		decisionPlaceholder, strconv.FormatInt(l.DecisionDelay.Milliseconds(), 10),
		cpuPlaceholder, factor(l.CPUFactor),
		memoryPlaceholder, strconv.Itoa(l.MemoryMiB),
	}
	for i := 0; i < len(r); i += 2 {
		if !strings.Contains(template, r[i]) {
			return "", fmt.Errorf("the levers patch has no %s placeholder", r[i])
		}
	}
	return strings.NewReplacer(r...).Replace(template), nil
}

// Name names the build (lower-case letters, digits and dashes, as the
// build script wants a mutant's name): "levers" and each lever that is
// set, a factor's point as "p" (cpu1p5).
func (l Lever) Name() string {
	parts := []string{"levers"}
	if l.LaunchDelay > 0 {
		parts = append(parts, fmt.Sprintf("launch%dms", l.LaunchDelay.Milliseconds()))
	}
	if l.DecisionDelay > 0 {
		parts = append(parts, fmt.Sprintf("decide%dms", l.DecisionDelay.Milliseconds()))
	}
	if l.CPUFactor > 1 {
		parts = append(parts, "cpu"+strings.ReplaceAll(factor(l.CPUFactor), ".", "p"))
	}
	if l.MemoryMiB > 0 {
		parts = append(parts, fmt.Sprintf("mem%dmib", l.MemoryMiB))
	}
	return strings.Join(parts, "-")
}

// factor prints a multiplier as a Go float constant (1 for unset).
func factor(f float64) string {
	if f <= 1 {
		return "1.0"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// DefaultConditions are make sensitivity's paired experiments: A/A on an
// idle and on a busy machine, launches 10%, 25% and 50% slower, decisions
// slower by a quarter of pod-ready, and Karpenter burning 1.25×, 1.5× and
// 2× its CPU and holding 1.5× its memory.
var DefaultConditions = []string{"unchanged", "loaded", "launch:1.1", "launch:1.25", "launch:1.5", "decide:1.25",
	"cpu:1.25", "cpu:1.5", "cpu:2", "memory:1.5"}

// ParseCondition turns a condition spec ("unchanged", "loaded", or
// lever:factor with lever launch, decide, cpu or memory) into a Condition.
// A delay is (factor − 1) times the baseline's median it slows:
// NodeClaim-ready for launch, pod-ready for decide; memory held is
// (factor − 1) times its median peak resident set, to the MiB.
func ParseCondition(spec string, b *fingerprint.Baseline) (Condition, error) {
	switch spec {
	case "unchanged":
		return Condition{Name: "unchanged"}, nil
	case "loaded":
		return Condition{Name: "unchanged, one core busy", Load: true}, nil
	}
	kind, f, ok := strings.Cut(spec, ":")
	factor, err := strconv.ParseFloat(f, 64)
	if !ok || err != nil || factor <= 1 || factor > 10 {
		return Condition{}, fmt.Errorf("condition %q: want unchanged, loaded, or launch, decide, cpu or memory with a factor above 1 and at most 10 (launch:1.25)", spec)
	}
	delay := func(s fingerprint.Samples) time.Duration {
		return time.Duration((factor - 1) * permtest.Median(s.Values) * float64(time.Second)).Round(time.Millisecond)
	}
	c := Condition{Name: fmt.Sprintf("%s ×%g", kind, factor), Factor: factor}
	switch kind {
	case "launch":
		c.Lever.LaunchDelay, c.Target = delay(b.Timing.NodeClaimReadyP50), "timing.nodeClaimReady.p50"
	case "decide":
		c.Lever.DecisionDelay, c.Target = delay(b.Timing.PodReadyP50), "timing.podReady.p50"
	case "cpu":
		c.Lever.CPUFactor, c.Target = factor, "karpenter.cpuSeconds"
	case "memory":
		if b.Karpenter != nil {
			c.Lever.MemoryMiB = int(math.Round((factor - 1) * permtest.Median(b.Karpenter.PeakRSSMiB.Values)))
		}
		if c.Lever.MemoryMiB <= 0 {
			return Condition{}, fmt.Errorf("condition %q: the baseline has no Karpenter peak resident set to size the memory from", spec)
		}
		c.Target = "karpenter.peakRSSMiB"
	default:
		return Condition{}, fmt.Errorf("condition %q: no lever %q (want launch, decide, cpu or memory)", spec, kind)
	}
	if (kind == "launch" || kind == "decide") && c.Lever.LaunchDelay+c.Lever.DecisionDelay <= 0 {
		return Condition{}, fmt.Errorf("condition %q: the baseline has no median to size the delay from", spec)
	}
	return c, nil
}

// CheckCondition checks a condition spec's form, before any baseline is
// read.
func CheckCondition(spec string) error {
	one := fingerprint.Samples{Values: []float64{1}}
	_, err := ParseCondition(spec, &fingerprint.Baseline{Timing: fingerprint.BaselineTiming{PodReadyP50: one, NodeClaimReadyP50: one},
		Karpenter: &fingerprint.BaselineKarpenter{PeakRSSMiB: fingerprint.Samples{Values: []float64{100}}}})
	return err
}

// LeversPatch is the levers patch template, under the repository root.
const LeversPatch = "fixtures/sensitivity/levers.patch"

// Build builds the pinned Karpenter of tc with l filled into the levers
// patch (written to dir/NAME.patch first), streaming the build's output
// to log: a build is skipped when its stamp says the same patch built it.
func (l Lever) Build(ctx context.Context, tc *toolchain.Toolchain, dir string, log io.Writer) (cluster.Build, error) {
	tmpl, err := os.ReadFile(filepath.Join(tc.Root, LeversPatch))
	if err != nil {
		return cluster.Build{}, err
	}
	patch, err := l.Patch(string(tmpl))
	if err != nil {
		return cluster.Build{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cluster.Build{}, err
	}
	file := filepath.Join(dir, l.Name()+".patch")
	if err := os.WriteFile(file, []byte(patch), 0o644); err != nil {
		return cluster.Build{}, err
	}
	if err := tc.BuildMutant(ctx, log, l.Name(), file); err != nil {
		return cluster.Build{}, fmt.Errorf("lever %s: %w", l.Name(), err)
	}
	return cluster.Build{Binary: tc.MutantBinary(l.Name()), Version: tc.Versions.Karpenter}, nil
}
