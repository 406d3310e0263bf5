package strictyaml

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxFileSize bounds an input file: scenarios, fixtures and fingerprints
// are small, and a bound keeps a wrong path (a log, a binary) from being
// read whole.
const MaxFileSize = 1 << 20

// ReadFile reads an input file of at most max bytes (MaxFileSize when
// max is 0) that must be valid UTF-8.
func ReadFile(path string, max int64) ([]byte, error) {
	if max == 0 {
		max = MaxFileSize
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, &FieldError{File: path, Msg: "is a directory, not a file"}
	}
	if st.Size() > max {
		return nil, &FieldError{File: path, Msg: fmt.Sprintf("file is %d bytes, more than the %d allowed", st.Size(), max)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	return data, CheckText(path, data, max)
}

// CheckText checks what ReadFile checks on data already read.
func CheckText(path string, data []byte, max int64) error {
	if max == 0 {
		max = MaxFileSize
	}
	if int64(len(data)) > max {
		return &FieldError{File: path, Msg: fmt.Sprintf("file is %d bytes, more than the %d allowed", len(data), max)}
	}
	if !utf8.Valid(data) {
		return &FieldError{File: path, Msg: "file is not valid UTF-8"}
	}
	return nil
}

// UserError is a decoding error (from a custom UnmarshalJSON) whose own
// message is the one to show, without the decoder's wrapping.
type UserError interface {
	error
	UserMessage() string
}

// ValueError is a UserError that names the value it refused: Decode finds
// the field that holds it, since the decoder's error does not say.
type ValueError interface {
	UserError
	RefusedValue() string
}

var (
	strictPathRE = regexp.MustCompile(`(unknown|duplicate) field "([^"]+)"`)
	typePathRE   = regexp.MustCompile(`Go struct field [^.\s]*\.(\S+) of type (\S+)`)
	yamlLineRE   = regexp.MustCompile(`line (\d+)`)
)

// Decode decodes YAML (or JSON) into v with unknown and duplicate fields
// disallowed, case-sensitively, and reports errors with path and line.
// fatal means v could not be decoded at all (bad YAML, a wrong type);
// unknown and duplicate fields are reported but v is usable, so that a
// caller can validate it and report every problem at once. hint is added
// to unknown-field messages (where the fields are documented).
func Decode(path string, data []byte, v any, hint string) (errs ErrorList, fatal bool) {
	pos, err := NewPositions(data)
	if err != nil {
		return ErrorList{{File: path, Line: yamlErrorLine(err), Msg: "not valid YAML: " + err.Error()}}, true
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return ErrorList{{File: path, Line: yamlErrorLine(err), Msg: "not valid YAML: " + err.Error()}}, true
	}
	if strings.TrimSpace(string(js)) == "null" {
		return ErrorList{{File: path, Msg: "file is empty"}}, true
	}
	for _, d := range pos.Duplicates() {
		d.File = path
		errs = append(errs, &d)
	}
	strict, err := kjson.UnmarshalStrict(js, v)
	if err != nil {
		fatal = true
		fe := &FieldError{File: path, Msg: err.Error()}
		var ue UserError
		if m := typePathRE.FindStringSubmatch(err.Error()); m != nil {
			fe.Path, fe.Line = m[1], pos.Line(m[1])
			fe.Msg = "wrong type: want " + m[2]
		} else if errors.As(err, &ue) {
			fe.Msg = ue.UserMessage()
			var ve ValueError
			if errors.As(err, &ve) {
				fe.Path, fe.Line = pos.Find(ve.RefusedValue())
			}
		}
		errs = append(errs, fe)
	}
	for _, se := range strict {
		fe := &FieldError{File: path, Msg: se.Error()}
		if m := strictPathRE.FindStringSubmatch(se.Error()); m != nil {
			fe.Path, fe.Line = m[2], pos.Line(m[2])
			fe.Msg = m[1] + " field"
			if m[1] == "unknown" && hint != "" {
				fe.Msg += " (" + hint + ")"
			}
		}
		errs = append(errs, fe)
	}
	return errs, fatal
}

func yamlErrorLine(err error) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		var n int
		_, _ = fmt.Sscanf(m[1], "%d", &n)
		return n
	}
	return 0
}

// DecodeJSON is Decode for files that are JSON (large catalogs): it skips
// the YAML conversion and the line index, so errors name the file and the
// field path but no line.
func DecodeJSON(path string, data []byte, v any, hint string) (errs ErrorList, fatal bool) {
	strict, err := kjson.UnmarshalStrict(data, v)
	if err != nil {
		fe := &FieldError{File: path, Msg: "not valid JSON: " + err.Error()}
		if m := typePathRE.FindStringSubmatch(err.Error()); m != nil {
			fe.Path, fe.Msg = m[1], "wrong type: want "+m[2]
		}
		return ErrorList{fe}, true
	}
	for _, se := range strict {
		fe := &FieldError{File: path, Msg: se.Error()}
		if m := strictPathRE.FindStringSubmatch(se.Error()); m != nil {
			fe.Path, fe.Msg = m[2], m[1]+" field"
			if m[1] == "unknown" && hint != "" {
				fe.Msg += " (" + hint + ")"
			}
		}
		errs = append(errs, fe)
	}
	return errs, false
}
