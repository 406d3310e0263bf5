// Package lang names the languages nodeprint writes its runbooks, rule
// texts and help in, once: the runbooks' directories, the rules' texts and
// the --lang flag all use these values.
package lang

import "slices"

// The languages.
const (
	En = "en" // English, the default
	Zh = "zh" // Chinese
)

// All are the languages, English first.
var All = []string{En, Zh}

// Known says whether l is one of All.
func Known(l string) bool { return slices.Contains(All, l) }
