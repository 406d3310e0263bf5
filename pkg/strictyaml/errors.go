// Package strictyaml reads nodeprint's input files (scenarios, NodePool
// fixtures, catalogs, fingerprints) strictly: bounded in size, UTF-8,
// unknown and duplicate fields rejected, and every problem reported as a
// *FieldError with the file, the field path and the line.
package strictyaml

import (
	"fmt"
	"strings"
)

// FieldError is one problem in an input file, located by field path and line.
type FieldError struct {
	File string
	// Path is the field path, e.g. spec.workloads[0].requests.cpu.
	Path string
	// Line is 1-based; 0 when unknown.
	Line int
	Msg  string
}

func (e *FieldError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Path, e.Msg)
}

// ErrorList is every problem found in one load; it is an error when non-empty.
type ErrorList []*FieldError

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.As find each *FieldError.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}
