package run

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// apiStats are Karpenter's client-side API request counters, from its
// Prometheus metrics (client_go_request_total and
// client_go_request_duration_seconds).
type apiStats struct {
	errors, requests, seconds float64
}

// failedCode says whether a response code counts as the API server failing:
// no response at all, a server error, or throttling. 4xx answers such as a
// 403 for an eviction a PodDisruptionBudget blocks are the API working.
func failedCode(code string) bool {
	return code == "<error>" || strings.HasPrefix(code, "5") || code == "429"
}

func readAPIStats(ctx context.Context, url string) (apiStats, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return apiStats{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return apiStats{}, fmt.Errorf("failed to read Karpenter's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiStats{}, fmt.Errorf("failed to read Karpenter's metrics: %s", resp.Status)
	}
	return parseAPIStats(bufio.NewScanner(resp.Body))
}

func parseAPIStats(sc *bufio.Scanner) (apiStats, error) {
	var s apiStats
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "client_go_request_total":
			s.requests += v
			for _, l := range strings.Split(labels, ",") {
				if k, val, _ := strings.Cut(l, "="); k == "code" && failedCode(strings.Trim(val, `"`)) {
					s.errors += v
				}
			}
		case "client_go_request_duration_seconds_sum":
			s.seconds += v
		}
	}
	return s, sc.Err()
}

// since is the change from before to s; a restarted Karpenter starts its
// counters again, and then s itself is the change.
func (s apiStats) since(before apiStats) apiStats {
	if s.requests < before.requests {
		return s
	}
	return apiStats{errors: s.errors - before.errors, requests: s.requests - before.requests, seconds: s.seconds - before.seconds}
}
