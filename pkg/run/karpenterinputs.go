package run

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/nodeprint/nodeprint/pkg/filecache"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// binaryDigests keeps each binary's sha256 while the file is unchanged: a
// Karpenter binary is about 100 MB.
var binaryDigests filecache.Cache[string]

// KarpenterOf is the Karpenter of the toolchain, for runs' inputs: its
// release, the sha256 of its binary (a build with another scheduler reads
// as a change even at the same version) and its non-default settings
// (none: nodeprint runs Karpenter with its defaults).
func KarpenterOf(tc *toolchain.Toolchain) (inputs.Karpenter, error) {
	return KarpenterAt(tc.Paths().Karpenter, tc.Versions.Karpenter)
}

// KarpenterAt is the Karpenter input of the binary at path, a build of
// release version (a provider's own build: the in-cluster image's).
func KarpenterAt(path, version string) (inputs.Karpenter, error) {
	digest, err := binaryDigests.Load(path, func(path string) (string, error) {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	})
	if err != nil {
		return inputs.Karpenter{}, fmt.Errorf("failed to digest the Karpenter binary: %w", err)
	}
	return inputs.Karpenter{Version: version, Binary: digest}, nil
}
