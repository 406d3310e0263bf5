package harness

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func sc(name, catalog, fault string) *scenario.Scenario {
	s := &scenario.Scenario{Metadata: scenario.Metadata{Name: name}, CatalogPath: catalog}
	if fault != "" {
		s.Spec.Fault = &scenario.Fault{Name: fault}
	}
	return s
}

func names(phases [][]*scenario.Scenario) string {
	var out []string
	for _, p := range phases {
		var ns []string
		for _, s := range p {
			ns = append(ns, s.Metadata.Name)
		}
		out = append(out, strings.Join(ns, ","))
	}
	return strings.Join(out, " | ")
}

func TestPhasesGroupCatalogsAndIsolateClusterWideFaults(t *testing.T) {
	ss := []*scenario.Scenario{
		sc("web", "generic", ""), sc("aws", "aws.json", ""), sc("leak", "generic", "memory-leak"), sc("crash", "generic", "crash-loop"),
		sc("capacity", "generic", "capacity-shortage"), sc("api", "generic", "apiserver-degraded"), sc("spot", "aws.json", "capacity-shortage"),
	}
	got := names(Phases(ss))
	// Baselines (web, aws) and cluster-wide faults run alone; the rest share.
	want := "aws | spot | crash,leak | api | capacity | web"
	if got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
}

// The longest fault window starts first: started last, it would hold the
// shared phase open alone (memory-leak-hpa, 4 minutes, sorts in the middle
// by name).
func TestSharedPhaseStartsTheLongestWindowFirst(t *testing.T) {
	withWindow := func(name string, d time.Duration) *scenario.Scenario {
		s := sc(name, "generic", "crash-loop")
		s.Spec.Fault.Window.Duration = d
		return s
	}
	got := names(Phases([]*scenario.Scenario{withWindow("a", time.Minute), withWindow("m", 4*time.Minute),
		withWindow("b", time.Minute), withWindow("z", 3*time.Minute)}))
	if want := "m,z,a,b"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
}

func TestRunPhasesBoundsConcurrencyAndCollectsErrors(t *testing.T) {
	var ss []*scenario.Scenario
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		ss = append(ss, sc(n, "generic", "crash-loop"))
	}
	var running, peak atomic.Int32
	errs := RunPhases(context.Background(), Phases(ss), 2, func(_ context.Context, s *scenario.Scenario) error {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if s.Metadata.Name == "c" {
			return errors.New("c failed")
		}
		return nil
	})
	if peak.Load() > 2 {
		t.Errorf("%d ran at once, want at most 2", peak.Load())
	}
	if len(errs) != 1 || errs[0].Error() != "c failed" {
		t.Errorf("errors %v", errs)
	}
}

func TestShardsCoverEveryScenarioOnce(t *testing.T) {
	var ss []*scenario.Scenario
	for _, n := range []string{"k", "b", "x", "a", "m", "c", "z"} {
		ss = append(ss, sc(n, "generic", ""))
	}
	seen := map[string]int{}
	for i := 1; i <= 3; i++ {
		for _, s := range Shard(ss, i, 3) {
			seen[s.Metadata.Name]++
		}
	}
	if len(seen) != len(ss) {
		t.Errorf("shards hold %d of %d scenarios", len(seen), len(ss))
	}
	for n, c := range seen {
		if c != 1 {
			t.Errorf("%s is in %d shards", n, c)
		}
	}
	if got := names([][]*scenario.Scenario{Shard(ss, 1, 3)}); got != "a,k,z" {
		t.Errorf("shard 1/3 = %s, want a,k,z (every third by name)", got)
	}
	for _, bad := range []string{"", "0/3", "4/3", "1/0", "a/b", "1/3/4", "-1/2"} {
		if _, _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if i, n, err := ParseShard("2/3"); err != nil || i != 2 || n != 3 {
		t.Errorf("ParseShard(2/3) = %d, %d, %v", i, n, err)
	}
}

// Karpenter's settings restart it as a catalog does: fault scenarios of
// one catalog with other settings share no phase with the rest.
func TestPhasesSeparateKarpenterSettings(t *testing.T) {
	batch := &scenario.Duration{Duration: 30 * time.Second}
	slow := sc("leak-slow-batch", "generic", "memory-leak")
	slow.Spec.Karpenter = &scenario.Karpenter{Settings: scenario.KarpenterSettings{BatchMaxDuration: batch}}
	ss := []*scenario.Scenario{sc("leak", "generic", "memory-leak"), sc("crash", "generic", "crash-loop"), slow}
	if got, want := names(Phases(ss)), "crash,leak | leak-slow-batch"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
}

// A cluster nodeprint does not own keeps its Karpenter's settings.
func TestCheckExistingRefusesSettings(t *testing.T) {
	s := load(t, "web-service")
	s.Spec.Karpenter = &scenario.Karpenter{Settings: scenario.KarpenterSettings{PreferencePolicy: "Ignore"}}
	var u *UnsupportedError
	if err := CheckExisting(s, s.CatalogPath); !errors.As(err, &u) || u.Field != "spec.karpenter.settings" {
		t.Errorf("got %v, want an UnsupportedError on spec.karpenter.settings", err)
	}
}

// A fault scenario whose expected rule reads Karpenter's process-wide
// counters cannot reach it beside other runs (they read unavailable when
// shared): it runs alone, whatever its fault.
func TestScenariosExpectingKarpenterWideRulesRunAlone(t *testing.T) {
	slow := sc("slow", "generic", "memory-leak")
	slow.Spec.Fault.Expect = &scenario.Expectation{Layer: "L1", Rule: "L1-apiserver-slow"}
	leak := sc("leak", "generic", "memory-leak")
	leak.Spec.Fault.Expect = &scenario.Expectation{Layer: "L3", Rule: "L3-oom-killed"}
	crash := sc("crash", "generic", "crash-loop")
	if got, want := names(Phases([]*scenario.Scenario{slow, leak, crash})), "crash,leak | slow"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
}

func load(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json"}
	s, err := l.Load("../../fixtures/scenarios/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
