package run

import (
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Loader loads scenarios against the repository's fixtures and the KWOK
// provider's generic catalog from the toolchain, as the CLI and the suites do.
func Loader(tc *toolchain.Toolchain) *scenario.Loader {
	return &scenario.Loader{FixturesDir: repo.At(tc.Root).Fixtures(), GenericCatalog: tc.Paths().InstanceTypes, ValidateFault: faults.Validate}
}

// Provenance is what a baseline records it was made with; the catalog
// fields are filled in by Record. Karpenter runs with its defaults.
func Provenance(tc *toolchain.Toolchain) fingerprint.Provenance {
	return fingerprint.Provenance{Karpenter: tc.Versions.Karpenter, Kubernetes: tc.Versions.Kubernetes, KarpenterSettings: map[string]string{}}
}

// ObservationEnv names the observation (gzipped JSON) BenchmarkPipeline
// reads instead of the committed testdata/observation-5000.json.gz;
// make bench passes the one it just recorded.
const ObservationEnv = "NODEPRINT_OBSERVATION"
