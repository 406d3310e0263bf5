package cluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The three control planes share one API-server probe; what it reports has
// to name the URL whatever the failure, and the error that left Status
// without clients has to come through unchanged.
func TestAPIServerReady(t *testing.T) {
	var status int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("[-]etcd failed: reason withheld\nreadyz check failed"))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	cl := &statusClients{clientset: cs, host: srv.URL}

	status = http.StatusOK
	if err := cl.apiServerReady(context.Background(), nil); err != nil {
		t.Fatalf("ready server: %v", err)
	}
	status = http.StatusInternalServerError
	err = cl.apiServerReady(context.Background(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), srv.URL+"/readyz: ") {
		t.Fatalf("failing /readyz: %v, want an error starting with %s/readyz", err, srv.URL)
	}
	srv.Close()
	if err := cl.apiServerReady(context.Background(), nil); err == nil || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("stopped server: %v, want an error naming %s", err, srv.URL)
	}

	cerr := errors.New("failed to read kubeconfig")
	var none *statusClients
	if err := none.apiServerReady(context.Background(), cerr); !errors.Is(err, cerr) {
		t.Fatalf("no clients: %v, want %v", err, cerr)
	}
}

func TestUnhealthyNamesTheComponentAFailureGoesThrough(t *testing.T) {
	st := Status{Exists: true, Components: []ComponentStatus{
		{Name: "etcd", Detail: "connection refused", Via: "kube-apiserver"},
		{Name: "kube-apiserver", Detail: "connection refused"},
		{Name: "metrics-server", Detail: "connection refused", Via: "kube-apiserver", PID: 7, Exited: true},
		{Name: "karpenter", Healthy: true},
	}}
	want := "etcd (asked through kube-apiserver), kube-apiserver (connection refused), metrics-server (connection refused)"
	if got := unhealthy(st); got != want {
		t.Fatalf("unhealthy = %q, want %q", got, want)
	}
	st.Components[1].Healthy = true
	if st.Blocked(st.Components[0]) {
		t.Fatal("etcd failing with the API server healthy is etcd's own failure")
	}
	if got := unhealthy(st); got != "etcd (connection refused), metrics-server (connection refused)" {
		t.Fatalf("unhealthy = %q", got)
	}
}
