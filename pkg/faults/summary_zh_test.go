package faults

import "testing"

func TestEveryFaultHasChineseSummary(t *testing.T) {
	known := map[string]bool{}
	for _, d := range Catalog() {
		known[d.Name] = true
		if summaryZh[d.Name] == "" || d.SummaryIn("zh") == d.Summary {
			t.Errorf("fault %s has no Chinese summary in summaryZh", d.Name)
		}
	}
	for name := range summaryZh {
		if !known[name] {
			t.Errorf("summaryZh has %s, which is no fault", name)
		}
	}
}
