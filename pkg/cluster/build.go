package cluster

import "github.com/nodeprint/nodeprint/pkg/toolchain"

// ToolchainBuild is the Karpenter build of tc: its binary (the pinned
// release, or the one tc was given) and release.
func ToolchainBuild(tc *toolchain.Toolchain) Build {
	return Build{Binary: tc.Paths().Karpenter, Version: tc.Versions.Karpenter}
}
