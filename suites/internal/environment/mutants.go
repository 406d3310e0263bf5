package environment

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
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
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Stdout = io.MultiWriter(&stdout, GinkgoWriter)
	cmd.Stderr = io.MultiWriter(&stderr, GinkgoWriter)
	err := cmd.Run()
	got := 0
	var ee *exec.ExitError
	if asExitError(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		got = -1
	}
	Expect(got).To(Equal(code), "%s %s exited %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), got, err, code, stdout.String(), stderr.String())
	return Result{Code: got, Stdout: stdout.String(), Stderr: stderr.String()}
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
