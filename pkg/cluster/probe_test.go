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
