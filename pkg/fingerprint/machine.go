package fingerprint

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Machine is the machine a baseline's runs were recorded on: information
// for the people who read the file, and the class record --add checks.
// Latencies and Karpenter's usage depend on it; what Karpenter chose does
// not.
type Machine struct {
	// CPU is the processor's model name (/proc/cpuinfo).
	CPU string `json:"cpu"`
	// Cores is the number of logical CPUs the harness could use.
	Cores int `json:"cores"`
	// Kernel is the kernel's release (information only).
	Kernel string `json:"kernel,omitempty"`
}

// Class is what makes two machines' timings comparable: the processor
// model and the core count (the kernel is not part of it).
func (m *Machine) Class() string {
	if m == nil {
		return "an unrecorded machine"
	}
	return fmt.Sprintf("%s × %d", m.CPU, m.Cores)
}

// ThisMachine is the machine nodeprint runs on.
func ThisMachine() *Machine {
	m := &Machine{CPU: "unknown", Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			m.CPU = strings.TrimSpace(v)
			break
		}
	}
	return m
}
