package process

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// 100 on every Linux this runs on.
const clockTicks = 100

// RSSBytes is a process's resident set size now (VmRSS).
func RSSBytes(pid int) (int64, error) { return statusKB(pid, "VmRSS:") }

// statusKB reads a field of /proc/<pid>/status given in kB, in bytes.
func statusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("failed to read the status of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("process %d: %s %q: %w", pid, field, rest, err)
				}
				return kb * 1024, nil
			}
		}
	}
	return 0, fmt.Errorf("process %d has no %s (a kernel thread or a zombie)", pid, strings.TrimSuffix(field, ":"))
}

// CPUSeconds is the user plus system CPU time a process has used.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("failed to read the stat of process %d: %w", pid, err)
	}
	// The command name is in parentheses and may hold spaces: fields
	// count from after its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("process %d: malformed stat %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("process %d: stat has %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("process %d: utime %q stime %q", pid, f[11], f[12])
	}
	return (ut + st) / clockTicks, nil
}

// PeakRSSBytes is the largest resident set a process has had since it
// started or since ResetPeakRSS (VmHWM).
func PeakRSSBytes(pid int) (int64, error) { return statusKB(pid, "VmHWM:") }

// ResetPeakRSS starts a process's peak resident set again from its
// current one (Linux's clear_refs value 5), so that PeakRSSBytes measures
// a window. The process must be the caller's (or the caller privileged).
func ResetPeakRSS(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("failed to reset the peak resident set of process %d: %w", pid, err)
	}
	return nil
}
