package cluster

import (
	"testing"
	"time"
)

// A finished phase says how long it took; one under way, what it does.
func TestEventString(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want string
	}{
		{Event{Phase: "karpenter", Message: "starting Karpenter"}, "karpenter     starting Karpenter"},
		{Event{Phase: "ready", Done: true, Elapsed: 1234567 * time.Microsecond, Message: "ignored"}, "ready         done in 1.23s"},
		{Event{Phase: "down", Done: true, Message: "nothing to stop"}, "down          nothing to stop"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.e, got, c.want)
		}
	}
}
