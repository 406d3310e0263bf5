package suitekit

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/mutants"
)

// ExpectCommand runs a command in dir to completion and expects its exit
// code; its output goes to the Ginkgo writer as well.
func ExpectCommand(ctx context.Context, dir string, code int, name string, args ...string) Result {
	GinkgoHelper()
	By(name + " " + strings.Join(args, " "))
	r, err := runCommand(ctx, dir, nil, name, args...)
	Expect(r.Code).To(Equal(code), "%s %s exited %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), r.Code, err, code, r.Stdout, r.Stderr)
	return r
}

// ExpectMatrix reads the matrix a mutants run wrote.
func ExpectMatrix(path string) *mutants.Matrix {
	GinkgoHelper()
	By("reading " + path)
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var m mutants.Matrix
	Expect(json.Unmarshal(b, &m)).To(Succeed())
	return &m
}
