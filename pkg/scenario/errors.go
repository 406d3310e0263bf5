package scenario

import "github.com/nodeprint/nodeprint/pkg/strictyaml"

// FieldError is one problem in an input file, located by field path and line.
type FieldError = strictyaml.FieldError

// ErrorList is every problem found in one load; it is an error when non-empty.
type ErrorList = strictyaml.ErrorList
