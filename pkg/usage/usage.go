// Package usage measures what Karpenter itself consumes while it does a
// run's work: CPU seconds, memory, API requests by verb and kind, and
// reconciles. Most of Karpenter's real regressions took this form (v1.8.1
// raised controller memory from about 300 MB to 1.6 GB; v1.11.0 burnt CPU
// in proportion to the number of NodePools) while its decisions stayed
// right.
//
// A Sample is read from Karpenter's Prometheus metrics, which every
// provider exposes (client-go's request counters and latency histogram,
// controller-runtime's reconcile counter, the Go process collector). Where
// Karpenter is a process of this machine (the local provider), /proc adds
// what metrics cannot: the peak resident set over the run (VmHWM, reset at
// the run's start), and CPU time at clock-tick resolution.
package usage

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Metrics are the metric families Parse reads. A signal's help that names
// a metric names one of these (pkg/attribute's test checks it): an
// engineer who greps for it must find what the verdict counted.
var Metrics = []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "process_start_time_seconds",
	"client_go_request_total", "client_go_request_duration_seconds", "controller_runtime_reconcile_total",
	DecisionsMetric, RemovedMetric}

// RemovedMetric counts the NodeClaims Karpenter removed, by NodePool and
// reason (empty, underutilized, drifted, expired, garbage_collected,
// liveness, …): expiry and the cloud's losses publish no event, only this.
const RemovedMetric = "karpenter_nodeclaims_disrupted_total"

// DecisionsMetric counts Karpenter's disruption decisions by decision
// (delete, replace), reason (empty, underutilized, drifted) and
// consolidation type (empty, single, multi; none for drift).
const DecisionsMetric = "karpenter_voluntary_disruption_decisions_total"

// Sample is Karpenter's counters at one moment.
type Sample struct {
	// CPUSeconds is process_cpu_seconds_total.
	CPUSeconds float64
	// RSSBytes is process_resident_memory_bytes.
	RSSBytes float64
	// StartSeconds is process_start_time_seconds: a change is a restart.
	StartSeconds float64
	// ReadSeconds is when Read read the sample (Unix seconds; 0 for a
	// parsed one).
	ReadSeconds float64
	// Requests counts API requests by "verb kind" (client_go_request_duration_seconds_count).
	Requests map[string]float64
	// Total and Failed are client_go_request_total over every code and
	// over the failing ones (no answer, 5xx, 429).
	Total, Failed float64
	// RequestSeconds is client_go_request_duration_seconds_sum.
	RequestSeconds float64
	// Reconciles is controller_runtime_reconcile_total over every controller and result.
	Reconciles float64
	// Decisions counts DecisionsMetric by "decision/reason/type" (DecisionKey).
	Decisions map[string]float64
	// Removed counts RemovedMetric by NodePool, then reason.
	Removed map[string]map[string]float64
}

// RemovedSince are the NodeClaims of nodePool Karpenter removed from
// before to s, by reason; nil when it restarted in between or does not
// export the metric.
func (s Sample) RemovedSince(before Sample, nodePool string) map[string]int {
	if s.Removed == nil || s.StartSeconds != before.StartSeconds {
		return nil
	}
	return growth(s.Removed[nodePool], before.Removed[nodePool])
}

// growth is how much each counter grew from before to after, for those
// that did.
func growth(after, before map[string]float64) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := int(v - before[k]); d > 0 {
			out[k] = d
		}
	}
	return out
}

// DecisionKey names a disruption decision's kind as Decisions keys it:
// "delete/underutilized/multi"; a decision without a consolidation type
// (drift) ends in "-".
func DecisionKey(decision, reason, consolidationType string) string {
	return decision + "/" + reason + "/" + cmp.Or(consolidationType, "-")
}

// DecisionsSince are the decisions Karpenter made from before to s; nil
// when it restarted in between (its counters began again) or neither
// sample has the metric (a Karpenter that does not export it).
func (s Sample) DecisionsSince(before Sample) map[string]int {
	if s.Decisions == nil || s.StartSeconds != before.StartSeconds {
		return nil
	}
	return growth(s.Decisions, before.Decisions)
}

// Usage is what Karpenter consumed between two samples.
type Usage struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	// PeakRSSBytes is the largest resident set seen: VmHWM since the
	// run's start where Karpenter is a local process, else the larger of
	// the two samples' RSS.
	PeakRSSBytes float64 `json:"peakRSSBytes"`
	// Requests are API requests by "verb kind", RequestsTotal their sum.
	Requests      map[string]int `json:"requests,omitempty"`
	RequestsTotal int            `json:"requestsTotal"`
	// Failed are the requests that got no answer, a 5xx or a 429.
	Failed int `json:"failed"`
	// MeanLatencyMs is the mean latency of the requests (0 for none).
	MeanLatencyMs float64 `json:"meanLatencyMs"`
	Reconciles    int     `json:"reconciles"`
	// Restarted says Karpenter restarted in between: the counters began
	// again, and the usage is the new process's alone.
	Restarted bool `json:"restarted,omitempty"`
	// UptimeSeconds is how long Karpenter had run when the window began
	// (from its process_start_time_seconds; 0 where it exports none):
	// a Karpenter just started carries its start-up into the window.
	UptimeSeconds float64 `json:"uptimeSeconds,omitempty"`
	// SharedWith is how many concurrent runs held Karpenter during the
	// window (--parallel): its counters hold their work too, and the usage
	// is not this run's.
	SharedWith int `json:"sharedWith,omitempty"`
}

// FailedCode says whether a response code counts as the API server
// failing: no response at all, a server error, or throttling. 4xx answers
// such as a 403 for an eviction a PodDisruptionBudget blocks are the API
// working.
func FailedCode(code string) bool {
	return code == "<error>" || strings.HasPrefix(code, "5") || code == "429"
}

// readTimeout bounds one read of the metrics endpoint.
const readTimeout = 5 * time.Second

// Read samples the metrics endpoint at url.
func Read(ctx context.Context, url string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Sample{}, fmt.Errorf("failed to read Karpenter's metrics: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Sample{}, fmt.Errorf("failed to read Karpenter's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Sample{}, fmt.Errorf("failed to read Karpenter's metrics at %s: %s", url, resp.Status)
	}
	s, err := Parse(resp.Body)
	s.ReadSeconds = float64(time.Now().UnixMilli()) / 1000
	return s, err
}

// Parse reads a sample from Prometheus's text format.
func Parse(r io.Reader) (Sample, error) {
	s := Sample{Requests: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, labels, v, ok := parseLine(sc.Text())
		if !ok {
			continue
		}
		switch name {
		case "process_cpu_seconds_total":
			s.CPUSeconds = v
		case "process_resident_memory_bytes":
			s.RSSBytes = v
		case "process_start_time_seconds":
			s.StartSeconds = v
		case "client_go_request_total":
			s.Total += v
			if FailedCode(labels["code"]) {
				s.Failed += v
			}
		case "client_go_request_duration_seconds_count":
			s.Requests[strings.ToUpper(labels["verb"])+" "+kindOf(labels)] += v
		case "client_go_request_duration_seconds_sum":
			s.RequestSeconds += v
		case "controller_runtime_reconcile_total":
			s.Reconciles += v
		case RemovedMetric:
			if s.Removed == nil {
				s.Removed = map[string]map[string]float64{}
			}
			np := labels["nodepool"]
			if s.Removed[np] == nil {
				s.Removed[np] = map[string]float64{}
			}
			s.Removed[np][labels["reason"]] += v
		case DecisionsMetric:
			if s.Decisions == nil {
				s.Decisions = map[string]float64{}
			}
			s.Decisions[DecisionKey(labels["decision"], labels["reason"], labels["consolidation_type"])] += v
		}
	}
	if err := sc.Err(); err != nil {
		return Sample{}, fmt.Errorf("failed to read Karpenter's metrics: %w", err)
	}
	return s, nil
}

// kindOf names a request's object: its kind, with the subresource.
func kindOf(l map[string]string) string {
	k := l["kind"]
	if k == "" {
		k = "(none)"
	}
	if sub := l["subresource"]; sub != "" {
		k += "/" + sub
	}
	return k
}

// parseLine splits `name{a="b",c="d"} value [timestamp]`; comments and
// malformed lines are not ok.
func parseLine(line string) (name string, labels map[string]string, v float64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	rest := line
	labels = map[string]string{}
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", nil, 0, false
		}
		name, rest = line[:i], line[j+1:]
		for _, kv := range splitLabels(line[i+1 : j]) {
			k, val, _ := strings.Cut(kv, "=")
			if uq, err := strconv.Unquote(val); err == nil {
				labels[strings.TrimSpace(k)] = uq
			}
		}
	} else {
		name, rest, _ = strings.Cut(line, " ")
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return name, labels, v, err == nil
}

// splitLabels splits at the commas outside quoted values.
func splitLabels(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// Since is what Karpenter consumed from before to s. A restarted
// Karpenter starts its counters again: then s itself is the usage.
func (s Sample) Since(before Sample) Usage {
	u := Usage{}
	if s.StartSeconds != before.StartSeconds || s.Total < before.Total || s.CPUSeconds < before.CPUSeconds {
		before, u.Restarted = Sample{}, true
	}
	u.CPUSeconds = round(s.CPUSeconds-before.CPUSeconds, 100)
	u.PeakRSSBytes = max(s.RSSBytes, before.RSSBytes)
	u.Requests = growth(s.Requests, before.Requests)
	for _, d := range u.Requests {
		u.RequestsTotal += d
	}
	u.Failed = int(s.Failed - before.Failed)
	if u.RequestsTotal > 0 {
		u.MeanLatencyMs = round((s.RequestSeconds-before.RequestSeconds)/float64(u.RequestsTotal)*1000, 100)
	}
	u.Reconciles = int(s.Reconciles - before.Reconciles)
	if !u.Restarted && before.StartSeconds > 0 && before.ReadSeconds > 0 {
		u.UptimeSeconds = round(before.ReadSeconds-before.StartSeconds, 10)
	}
	return u
}

func round(v, to float64) float64 { return float64(int64(v*to+0.5)) / to }

// Top lists the n request kinds with the most requests, "verb kind: n".
func (u Usage) Top(n int) []string {
	keys := slices.Sorted(maps.Keys(u.Requests))
	sort.SliceStable(keys, func(i, j int) bool { return u.Requests[keys[i]] > u.Requests[keys[j]] })
	var out []string
	for _, k := range keys[:min(n, len(keys))] {
		out = append(out, fmt.Sprintf("%s: %d", k, u.Requests[k]))
	}
	return out
}
