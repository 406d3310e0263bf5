package cluster

import (
	"sync"
	"testing"
)

// Parallel runs read the state while a catalog switch writes it: a reader
// must never see a half-written file (it once did, failing two scenarios
// of a --parallel 4 run with "unexpected end of JSON input").
func TestStateWritesAreAtomic(t *testing.T) {
	l := &Local{opts: Options{name: "state-test"}, dir: t.TempDir()}
	l.cp = &kwokctlPlane{l: l}
	if err := l.writeState(state{Name: "state-test", Catalog: "a.json"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 300; i++ {
			c := "a.json"
			if i%2 == 1 {
				c = "a-much-longer-catalog-name-that-changes-the-file-size.json"
			}
			if err := l.writeState(state{Name: "state-test", Catalog: c, KarpenterVersion: "v1.14.1"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 300; i++ {
			if _, err := l.readState(); err != nil {
				t.Errorf("read %d: %v", i, err)
				return
			}
		}
	}()
	wg.Wait()
}
