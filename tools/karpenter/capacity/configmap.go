package capacity

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConfigMapSource reads the rules from the ConfigMap ConfigMapName in a
// namespace. It reads through an uncached reader, so Karpenter's manager does
// not start a cluster-wide ConfigMap informer for it, and keeps the answer for
// a short time because GetInstanceTypes is called on every scheduling pass.
type ConfigMapSource struct {
	reader    client.Reader
	namespace string
	maxAge    time.Duration
	clock     clock.Clock

	mu      sync.Mutex
	fetched time.Time
	rules   Rules
}

// NewConfigMapSource returns a Source over the ConfigMap in namespace. maxAge
// bounds how stale an answer may be (one second is plenty for faults that
// last minutes).
func NewConfigMapSource(reader client.Reader, namespace string, maxAge time.Duration, clk clock.Clock) *ConfigMapSource {
	return &ConfigMapSource{reader: reader, namespace: namespace, maxAge: maxAge, clock: clk}
}

// Rules implements Source. A missing ConfigMap means no rules.
func (s *ConfigMapSource) Rules(ctx context.Context) (Rules, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fetched.IsZero() && s.clock.Since(s.fetched) < s.maxAge {
		return s.rules, nil
	}
	cm := &corev1.ConfigMap{}
	err := s.reader.Get(ctx, types.NamespacedName{Namespace: s.namespace, Name: ConfigMapName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		s.rules = Rules{}
	case err != nil:
		return Rules{}, fmt.Errorf("getting configmap %s/%s, %w", s.namespace, ConfigMapName, err)
	default:
		r, err := ParseRules(cm.Data)
		if err != nil {
			return Rules{}, err
		}
		s.rules = r
	}
	s.fetched = s.clock.Now()
	return s.rules, nil
}
