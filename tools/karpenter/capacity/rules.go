// Package capacity is a Karpenter cloud-provider decorator that makes the
// simulated cloud refuse named offerings with Karpenter's
// insufficient-capacity error, the way a real cloud does when a zone runs out
// of an instance type or of spot capacity.
//
// The refusals are read at run time from a ConfigMap (see ConfigMapName), so a
// test can start and stop a capacity shortage without restarting Karpenter.
// With the ConfigMap absent the decorator changes nothing.
package capacity

import (
	"errors"
	"fmt"
	"strings"
	"time"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	// ConfigMapName is the ConfigMap, in Karpenter's system namespace, that
	// holds the refusals.
	ConfigMapName = "nodeprint-capacity"
	// RefuseKey is the data key with the list of refused offerings (YAML).
	RefuseKey = "refuse"
	// TTLKey is the optional data key with how long a refused offering is then
	// reported as unavailable from GetInstanceTypes (a Go duration).
	TTLKey = "unavailableTTL"
	// LaunchDelayKey is the optional data key with how long every launch
	// takes before the cloud answers (a Go duration): a slower cloud API,
	// or a Karpenter release whose launches got slower. nodeprint's
	// sensitivity measurement (make sensitivity) sets it to slow
	// NodeClaim-ready by a known factor.
	LaunchDelayKey = "launchDelay"
	// DefaultUnavailableTTL mirrors the AWS provider's insufficient-capacity
	// cache: after a refusal, the offering is unavailable for three minutes.
	DefaultUnavailableTTL = 3 * time.Minute
	// Any matches every value of a field. An empty field matches every value too.
	Any = "*"
)

// Offering names one offering: instance type × zone × capacity type.
// Each field is an exact value, or "*" / empty for any value.
type Offering struct {
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
}

func (o Offering) String() string {
	f := func(s string) string {
		if s == "" {
			return Any
		}
		return s
	}
	return f(o.InstanceType) + "/" + f(o.Zone) + "/" + f(o.CapacityType)
}

// Matches reports whether the concrete offering (it, zone, ct) is covered by o.
func (o Offering) Matches(it, zone, ct string) bool {
	m := func(pattern, v string) bool { return pattern == "" || pattern == Any || pattern == v }
	return m(o.InstanceType, it) && m(o.Zone, zone) && m(o.CapacityType, ct)
}

// Rules is the decoded content of the ConfigMap.
type Rules struct {
	Refuse         []Offering
	UnavailableTTL time.Duration
	LaunchDelay    time.Duration
}

// Empty reports whether the rules refuse nothing.
func (r Rules) Empty() bool { return len(r.Refuse) == 0 }

// Refuses reports the first rule that covers the concrete offering, if any.
func (r Rules) Refuses(it, zone, ct string) (Offering, bool) {
	for _, o := range r.Refuse {
		if o.Matches(it, zone, ct) {
			return o, true
		}
	}
	return Offering{}, false
}

// ParseRules decodes the ConfigMap data. Unknown fields are errors, so a typo
// in a fault definition fails loudly instead of refusing nothing.
func ParseRules(data map[string]string) (Rules, error) {
	r := Rules{UnavailableTTL: DefaultUnavailableTTL}
	for k := range data {
		if k != RefuseKey && k != TTLKey && k != LaunchDelayKey {
			return Rules{}, fmt.Errorf("configmap %s: unknown key %q (want %q, %q or %q)", ConfigMapName, k, RefuseKey, TTLKey, LaunchDelayKey)
		}
	}
	if raw := strings.TrimSpace(data[RefuseKey]); raw != "" {
		js, err := yaml.YAMLToJSON([]byte(raw))
		if err != nil {
			return Rules{}, fmt.Errorf("configmap %s: data.%s: %w", ConfigMapName, RefuseKey, err)
		}
		// sigs.k8s.io/json is case-sensitive, unlike encoding/json: a field
		// spelled "instancetype" is reported, not silently accepted.
		strict, err := kjson.UnmarshalStrict(js, &r.Refuse)
		if err == nil && len(strict) > 0 {
			err = errors.Join(strict...)
		}
		if err != nil {
			return Rules{}, fmt.Errorf("configmap %s: data.%s: want a list of {instanceType, zone, capacityType}: %w", ConfigMapName, RefuseKey, err)
		}
	}
	if raw := strings.TrimSpace(data[TTLKey]); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 {
			return Rules{}, fmt.Errorf("configmap %s: data.%s: %q is not a non-negative duration such as 3m", ConfigMapName, TTLKey, raw)
		}
		r.UnavailableTTL = d
	}
	if raw := strings.TrimSpace(data[LaunchDelayKey]); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 || d > 10*time.Minute {
			return Rules{}, fmt.Errorf("configmap %s: data.%s: %q is not a duration from 0 to 10m such as 500ms", ConfigMapName, LaunchDelayKey, raw)
		}
		r.LaunchDelay = d
	}
	return r, nil
}
