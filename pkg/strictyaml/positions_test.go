package strictyaml

import "testing"

func TestFind(t *testing.T) {
	p, err := NewPositions([]byte("spec:\n  steps:\n  - after: 5s\n  - after: soon\n    x: soon\n"))
	if err != nil {
		t.Fatal(err)
	}
	if path, line := p.Find("soon"); path != "spec.steps[1].after" || line != 4 {
		t.Fatalf("Find = %s:%d, want spec.steps[1].after:4", path, line)
	}
	if path, line := p.Find("never"); path != "" || line != 0 {
		t.Fatalf("Find of an absent value = %s:%d", path, line)
	}
}
