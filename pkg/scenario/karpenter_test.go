package scenario

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The chart's settings become the environment Karpenter reads; gates not
// set keep Karpenter's defaults, since FEATURE_GATES replaces its list.
func TestKarpenterSettingsEnv(t *testing.T) {
	path := write(t, strings.Replace(valid, "spec:\n", `spec:
  karpenter:
    settings:
      batchMaxDuration: 30s
      batchIdleDuration: 2s
      preferencePolicy: Ignore
      featureGates: {spotToSpotConsolidation: true}
`, 1))
	s, err := loader(t).Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"BATCH_MAX_DURATION": "30s", "BATCH_IDLE_DURATION": "2s", "PREFERENCE_POLICY": "Ignore",
		"FEATURE_GATES": "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=true,StaticCapacity=false",
	}
	if d := cmp.Diff(want, s.Spec.Karpenter.Env()); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
	if env := (*Karpenter)(nil).Env(); len(env) != 0 {
		t.Errorf("no settings: %v, want none", env)
	}
}

func TestBadKarpenterSettings(t *testing.T) {
	for _, c := range []struct{ settings, want string }{
		{"preferencePolicy: Sometimes", `spec.karpenter.settings.preferencePolicy: want Respect or Ignore, got "Sometimes"`},
		{"minValuesPolicy: Loose", `spec.karpenter.settings.minValuesPolicy: want Strict or BestEffort`},
		{"batchMaxDuration: 0s", `spec.karpenter.settings.batchMaxDuration: 0s: want a duration above 0`},
		{"featureGates: {spotToSpot: true}", `spec.karpenter.settings.featureGates.spotToSpot: not a feature gate of the pinned Karpenter (capacityBuffer, nodeOverlay`},
		{"batchWindow: 10s", `spec.karpenter.settings.batchWindow: unknown field`},
	} {
		path := write(t, strings.Replace(valid, "spec:\n", "spec:\n  karpenter:\n    settings:\n      "+c.settings+"\n", 1))
		if _, err := loader(t).Load(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.settings, err, c.want)
		}
	}
}
