package scenario

import (
	"fmt"
	"sort"
	"strings"
)

// Karpenter is how Karpenter runs the scenario: the settings its Helm
// chart exposes, written as in the chart's values (settings.*).
type Karpenter struct {
	Settings KarpenterSettings `json:"settings,omitempty"`
}

// KarpenterSettings are the chart's settings that change what Karpenter
// provisions. Unset ones keep Karpenter's defaults.
type KarpenterSettings struct {
	// BatchMaxDuration and BatchIdleDuration bound the provisioning batch
	// window (default 10s and 1s).
	BatchMaxDuration  *Duration `json:"batchMaxDuration,omitempty"`
	BatchIdleDuration *Duration `json:"batchIdleDuration,omitempty"`
	// PreferencePolicy is Respect (default) or Ignore.
	PreferencePolicy string `json:"preferencePolicy,omitempty"`
	// MinValuesPolicy is Strict (default) or BestEffort.
	MinValuesPolicy string `json:"minValuesPolicy,omitempty"`
	// FeatureGates turn Karpenter's feature gates on or off, by the
	// chart's names (spotToSpotConsolidation, nodeRepair, …).
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// featureGates are Karpenter's gates (the pinned release's) by the chart's
// name, with Karpenter's name and default.
var featureGates = map[string]struct {
	name string
	on   bool
}{
	"nodeRepair":              {"NodeRepair", false},
	"reservedCapacity":        {"ReservedCapacity", true},
	"spotToSpotConsolidation": {"SpotToSpotConsolidation", false},
	"nodeOverlay":             {"NodeOverlay", false},
	"staticCapacity":          {"StaticCapacity", false},
	"capacityBuffer":          {"CapacityBuffer", false},
}

// Env is the settings as Karpenter reads them from its environment, only
// those set: an empty map runs Karpenter with its defaults.
func (k *Karpenter) Env() map[string]string {
	env := map[string]string{}
	if k == nil {
		return env
	}
	s := k.Settings
	if s.BatchMaxDuration != nil {
		env["BATCH_MAX_DURATION"] = s.BatchMaxDuration.String()
	}
	if s.BatchIdleDuration != nil {
		env["BATCH_IDLE_DURATION"] = s.BatchIdleDuration.String()
	}
	if s.PreferencePolicy != "" {
		env["PREFERENCE_POLICY"] = s.PreferencePolicy
	}
	if s.MinValuesPolicy != "" {
		env["MIN_VALUES_POLICY"] = s.MinValuesPolicy
	}
	if len(s.FeatureGates) > 0 {
		// FEATURE_GATES replaces Karpenter's whole default list: every gate
		// is written, the ones not set at their defaults.
		var gates []string
		for chart, g := range featureGates {
			on := g.on
			if v, ok := s.FeatureGates[chart]; ok {
				on = v
			}
			gates = append(gates, fmt.Sprintf("%s=%t", g.name, on))
		}
		sort.Strings(gates)
		env["FEATURE_GATES"] = strings.Join(gates, ",")
	}
	return env
}

func validateKarpenter(k *Karpenter, add func(field, msg string, args ...any)) {
	if k == nil {
		return
	}
	s := k.Settings
	for f, d := range map[string]*Duration{"batchMaxDuration": s.BatchMaxDuration, "batchIdleDuration": s.BatchIdleDuration} {
		if d != nil && d.Duration <= 0 {
			add("spec.karpenter.settings."+f, "%s: want a duration above 0, such as \"10s\"", d.Duration)
		}
	}
	if p := s.PreferencePolicy; p != "" && p != "Respect" && p != "Ignore" {
		add("spec.karpenter.settings.preferencePolicy", "want Respect or Ignore, got %q", p)
	}
	if p := s.MinValuesPolicy; p != "" && p != "Strict" && p != "BestEffort" {
		add("spec.karpenter.settings.minValuesPolicy", "want Strict or BestEffort, got %q", p)
	}
	var known []string
	for g := range featureGates {
		known = append(known, g)
	}
	sort.Strings(known)
	for g := range s.FeatureGates {
		if _, ok := featureGates[g]; !ok {
			add("spec.karpenter.settings.featureGates."+g, "not a feature gate of the pinned Karpenter (%s)", strings.Join(known, ", "))
		}
	}
}
