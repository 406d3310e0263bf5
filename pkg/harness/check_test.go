package harness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func TestCheckExisting(t *testing.T) {
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json", ValidateFault: faults.Validate}
	aws, _ := filepath.Abs("../../fixtures/catalogs/aws-small.json")
	// --catalog through a symbolic link names the same file.
	awsLink := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.Symlink(aws, awsLink); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, catalog, field, want string
	}{
		{file: "web-service.yaml", catalog: "generic.json"},
		{file: "faults/memory-leak.yaml", catalog: "generic.json"},
		{file: "faults/nodepool-mismatch.yaml", catalog: "generic.json"},
		{file: "faults/capacity-shortage-pending.yaml", catalog: "generic.json", field: "spec.fault.name", want: "capacity-shortage is an infrastructure (L1) fault"},
		{file: "faults/apiserver-degraded.yaml", catalog: "generic.json", field: "spec.fault.name", want: "--provider local"},
		{file: "faults/slow-boot.yaml", catalog: "generic.json", field: "spec.fault.name", want: "slow-boot is an infrastructure (L1) fault"},
		{file: "aws-families.yaml", catalog: "generic.json", field: "spec.catalog", want: `needs catalog "aws-small"`},
		{file: "aws-families.yaml", catalog: aws},
		{file: "aws-families.yaml", catalog: awsLink},
		{file: "aws-families.yaml", catalog: "../../fixtures/catalogs/aws-small.json"},
		{file: "web-service.yaml", catalog: aws, field: "spec.catalog", want: "pass --catalog"},
	} {
		t.Run(tc.file+" on "+filepath.Base(tc.catalog), func(t *testing.T) {
			ss, err := l.LoadFiles(filepath.Join("../../fixtures/scenarios", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckExisting(ss[0], tc.catalog)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckExisting: %v, want accepted", err)
				}
				return
			}
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("CheckExisting: %v, want an *UnsupportedError", err)
			}
			if ue.Field != tc.field || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("CheckExisting: field %q, %q; want field %q naming the file and saying %q", ue.Field, err, tc.field, tc.want)
			}
		})
	}
}

// A scenario that scales with an HPA is refused, naming the workload's
// hpa field, only where the cluster serves no pod metrics (kind).
func TestCheckPodMetrics(t *testing.T) {
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json", ValidateFault: faults.Validate}
	for _, tc := range []struct {
		file string
		kind cluster.Kind
		want string
	}{
		{file: "faults/memory-leak-hpa.yaml", kind: cluster.KindKind, want: "spec.workloads[0].hpa: the kind provider serves no pod metrics"},
		{file: "faults/cpu-spike-hpa.yaml", kind: cluster.KindKind, want: "spec.workloads[0].hpa"},
		{file: "faults/memory-leak-hpa.yaml", kind: cluster.KindLocal},
		{file: "faults/memory-leak-hpa.yaml", kind: cluster.KindExisting},
		{file: "faults/memory-leak.yaml", kind: cluster.KindKind},
		{file: "web-service.yaml", kind: cluster.KindKind},
	} {
		t.Run(tc.file+" on "+string(tc.kind), func(t *testing.T) {
			ss, err := l.LoadFiles(filepath.Join("../../fixtures/scenarios", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckPodMetrics(ss[0], tc.kind)
			var u *UnsupportedError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!errors.As(err, &u) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an *UnsupportedError saying %q", err, tc.want)
			}
		})
	}
}

// Where Karpenter runs in a pod, only the faults that act on it as a
// process of this machine are refused, naming the fault's field.
func TestCheckKarpenterPlacement(t *testing.T) {
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json", ValidateFault: faults.Validate}
	entries, err := os.ReadDir("../../fixtures/scenarios/faults")
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range append(entries, nil) {
		file := "web-service.yaml"
		if e != nil {
			file = "faults/" + e.Name()
		}
		ss, err := l.LoadFiles(filepath.Join("../../fixtures/scenarios", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckKarpenterPlacement(ss[0], false); err != nil {
			t.Errorf("%s refused with Karpenter as a process: %v", file, err)
		}
		err = CheckKarpenterPlacement(ss[0], true)
		want := file == "faults/apiserver-degraded.yaml"
		var u *UnsupportedError
		switch {
		case want && (!errors.As(err, &u) || u.Field != "spec.fault.name" || !strings.Contains(err.Error(), "--karpenter-in-cluster")):
			t.Errorf("%s: got %v, want an *UnsupportedError on spec.fault.name naming --karpenter-in-cluster", file, err)
		case !want && err != nil:
			t.Errorf("%s refused in-cluster: %v", file, err)
		case want:
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d scenarios refused, want apiserver-degraded only", refused)
	}
}
