package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/fit"
)

// hangingRunner is a runner whose API server accepts every request and
// never answers: an API server that hangs during informer sync or at the
// end of a run. Its waits are shortened; the test fails if one is not
// bounded (the old observer start and fact reads waited forever).
func hangingRunner(t *testing.T) *Runner {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: " + srv.URL + "}}]\n" +
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n"
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(kubeconfig, nil, func(r *Runner) {
		r.syncTimeout, r.factsTimeout, r.requestTimeout = 300*time.Millisecond, 300*time.Millisecond, 200*time.Millisecond
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bounded runs f and fails the test if it outlasts limit.
func bounded(t *testing.T, what string, limit time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("%s did not return within %s against an API server that does not answer", what, limit)
		return nil
	}
}

func TestObserverStartIsBounded(t *testing.T) {
	r := hangingRunner(t)
	s := load(t, "aws-families")
	objs, err := Build(s, "aws-families-abcde")
	if err != nil {
		t.Fatal(err)
	}
	a := &attempt{s: s, id: "aws-families-abcde", objs: objs, since: time.Now()}
	err = bounded(t, "the observer's start", 10*time.Second, func() error { return r.observe(context.Background(), a) })
	if err == nil || !strings.Contains(err.Error(), "did not sync within 300ms") {
		t.Fatalf("want the wait named, got %v", err)
	}
	if rerr := a.rollback(context.Background()); rerr != nil {
		t.Errorf("rollback: %v", rerr)
	}
}

func TestEndOfRunFactsAreBounded(t *testing.T) {
	r := hangingRunner(t)
	s := load(t, "aws-families")
	objs, err := Build(s, "aws-families-abcde")
	if err != nil {
		t.Fatal(err)
	}
	shapes, err := fit.Load(context.Background(), s.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	a := &attempt{s: s, id: "aws-families-abcde", objs: objs, shapes: shapes, since: time.Now(), actx: context.Background()}
	err = bounded(t, "the end-of-run reads", 10*time.Second, func() error { _, err := r.facts(context.Background(), a); return err })
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") {
		t.Fatalf("want the wait named, got %v", err)
	}
}
