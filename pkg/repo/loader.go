package repo

import (
	"os"

	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Loader loads scenarios against the repository's fixtures and the KWOK
// provider's generic catalog from the toolchain, as the CLI and the suites do.
func Loader(tc *toolchain.Toolchain) *scenario.Loader {
	return &scenario.Loader{FixturesDir: At(tc.Root).Fixtures(), GenericCatalog: tc.Paths().InstanceTypes, ValidateFault: faults.Validate}
}

// Provenance is what a baseline records it was made with, on this machine;
// the catalog fields are filled in by Record. Karpenter runs with its
// defaults.
func Provenance(tc *toolchain.Toolchain) fingerprint.Provenance {
	return fingerprint.Provenance{Karpenter: tc.Versions.Karpenter, Kubernetes: tc.Versions.Kubernetes, KarpenterSettings: map[string]string{},
		Machine: fingerprint.ThisMachine()}
}

// Default is the layout commands and jobs default to: the team repository
// at or above the working directory, else the checkout the toolchain was
// found in (Find), else a team repository at the working directory.
func Default(tc *toolchain.Toolchain) Layout {
	wd, err := os.Getwd()
	if err != nil {
		wd = "."
	}
	checkout := ""
	if tc.Source == toolchain.Checkout {
		checkout = tc.Root
	}
	return Find(wd, checkout)
}
