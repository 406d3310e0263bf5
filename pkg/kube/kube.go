// Package kube builds Kubernetes clients that know Karpenter's and KWOK's
// types, and applies manifests the way `kubectl apply --server-side` does.
package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kwokapis "sigs.k8s.io/karpenter/kwok/apis"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpapis "sigs.k8s.io/karpenter/pkg/apis"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// FieldOwner is the server-side-apply manager name of everything nodeprint applies.
const FieldOwner = "nodeprint"

// Scheme knows core Kubernetes, CRDs, Karpenter and the KWOK node class.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(Scheme))
	// Karpenter's API packages register themselves only into client-go's
	// global scheme; nodeprint keeps a scheme of its own.
	karpGV := schema.GroupVersion{Group: karpapis.Group, Version: "v1"}
	metav1.AddToGroupVersion(Scheme, karpGV)
	Scheme.AddKnownTypes(karpGV, &karpv1.NodePool{}, &karpv1.NodePoolList{}, &karpv1.NodeClaim{}, &karpv1.NodeClaimList{})
	kwokGV := schema.GroupVersion{Group: kwokapis.Group, Version: "v1alpha1"}
	metav1.AddToGroupVersion(Scheme, kwokGV)
	Scheme.AddKnownTypes(kwokGV, &kwokv1alpha1.KWOKNodeClass{}, &kwokv1alpha1.KWOKNodeClassList{})
}

// Config loads a rest config from a kubeconfig file, with client-side rate
// limits raised: the harness watches and lists, it does not hammer.
func Config(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("failed to load kubeconfig %s: %w", kubeconfig, err)
	}
	if err := inlineClientCert(cfg); err != nil {
		return nil, fmt.Errorf("failed to load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

// inlineClientCert reads a client certificate and key given as files into
// the config. Given files, client-go starts a goroutine per transport that
// re-reads them every few minutes and is never stopped: one leaks per
// cluster a long process (bench, the lifecycle suite) starts, and once
// Down has removed the cluster's directory each logs "no such file" until
// the process exits. nodeprint's clusters never rotate a certificate in
// place (a cluster started again gets new clients).
func inlineClientCert(cfg *rest.Config) error {
	tls := &cfg.TLSClientConfig
	if tls.CertFile == "" || tls.KeyFile == "" || len(tls.CertData) > 0 || len(tls.KeyData) > 0 {
		return nil
	}
	cert, err := os.ReadFile(tls.CertFile)
	if err != nil {
		return fmt.Errorf("failed to read the client certificate: %w", err)
	}
	key, err := os.ReadFile(tls.KeyFile)
	if err != nil {
		return fmt.Errorf("failed to read the client key: %w", err)
	}
	tls.CertData, tls.KeyData, tls.CertFile, tls.KeyFile = cert, key, "", ""
	return nil
}

// NewClient returns a controller-runtime client for the kubeconfig.
func NewClient(kubeconfig string) (client.Client, error) {
	cfg, err := Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client for %s: %w", kubeconfig, err)
	}
	return c, nil
}

// Decode splits a multi-document YAML stream into objects. Empty documents
// are skipped; a document without kind is an error naming the source.
func Decode(source string, r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: document %d has no kind or apiVersion", source, i)
		}
		out = append(out, u)
	}
}

// DecodeFiles decodes every *.yaml file in the given files or directories
// (not recursive), in name order, skipping kustomization.yaml.
func DecodeFiles(paths ...string) ([]*unstructured.Unstructured, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("failed to read manifests: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("failed to read manifests: %w", err)
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) && e.Name() != "kustomization.yaml" {
				names = append(names, filepath.Join(p, e.Name()))
			}
		}
		sort.Strings(names)
		files = append(files, names...)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("failed to read manifests: %w", err)
		}
		objs, err := Decode(f, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Apply server-side-applies each object, forcing ownership: nodeprint owns
// the objects it applies.
func Apply(ctx context.Context, c client.Client, objs ...*unstructured.Unstructured) error {
	for _, o := range objs {
		o = o.DeepCopy()
		o.SetManagedFields(nil)
		o.SetResourceVersion("")
		if err := c.Patch(ctx, o, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("failed to apply %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}
