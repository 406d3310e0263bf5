// Package examples holds CI and Kubernetes examples (a team's own suites
// are in e2e-framework/, and run for real); its tests keep them valid.
// Their nodeprint command lines are parsed with the CLI's own command tree
// by tools/nodeprint's TestExamplesRunWithTheCLIsFlags, which has it.
package examples

import (
	"os"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

func TestIndexedJobShardsTheCatalog(t *testing.T) {
	b, err := os.ReadFile("kubernetes/indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{}
	if err := yaml.UnmarshalStrict(b, job); err != nil {
		t.Fatalf("indexed-job.yaml is not a valid batch/v1 Job: %v", err)
	}
	if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion || job.Spec.Completions == nil {
		t.Fatalf("not an Indexed Job with completions: %+v", job.Spec)
	}
	c := job.Spec.Template.Spec.Containers[0]
	args := strings.Join(append(c.Command, c.Args...), " ")
	want := "--shard \"$((JOB_COMPLETION_INDEX + 1))/" + strconv.Itoa(int(*job.Spec.Completions)) + "\""
	if !strings.Contains(args, want) || !strings.Contains(args, "--report-dir") {
		t.Errorf("the container does not run its shard (%s) with a report: %s", want, args)
	}
	if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Error("the example should show that no privileges are needed")
	}
}

func TestCIExamplesRunShardsAndPublishReports(t *testing.T) {
	for _, f := range []string{"github-actions/nodeprint.yml", "gitlab-ci/nodeprint.gitlab-ci.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Errorf("%s is not valid YAML: %v", f, err)
		}
		// The flags are parsed in tools/nodeprint; these are the steps
		// around the command.
		for _, want := range []string{"summary.md", "make tools"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s does not mention %q", f, want)
			}
		}
	}
}
