package attribute

import "testing"

func TestEverySignalHasChineseHelp(t *testing.T) {
	known := map[string]bool{}
	for _, s := range Signals() {
		known[s.ID] = true
		if signalHelpZh[s.ID] == "" {
			t.Errorf("signal %s has no Chinese help in signalHelpZh", s.ID)
		}
		if s.HelpIn("en") != s.Help {
			t.Errorf("signal %s: HelpIn(en) is not Help", s.ID)
		}
	}
	for id := range signalHelpZh {
		if !known[id] {
			t.Errorf("signalHelpZh has %s, which is no signal", id)
		}
	}
}
