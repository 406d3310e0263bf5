package scenario

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/strictyaml"
)

// A manifest is a file as a team commits or renders it: one or more YAML
// documents (kubectl's, Helm's and kustomize's multi-document output),
// each a Kubernetes object. Scenarios name such files for their NodePool
// (policy.nodePoolFile) and their workloads (workloads[].manifest).

// document is one object of a manifest file.
type document struct {
	// Index counts the file's non-empty documents from 1; Line is where
	// the document starts in the file.
	Index, Line int
	APIVersion  string
	Kind, Name  string
	data        []byte
}

// String names the document as errors do: "document 2 (NodePool general)".
func (d *document) String() string {
	return fmt.Sprintf("document %d (%s %s)", d.Index, d.Kind, d.Name)
}

var separatorRE = regexp.MustCompile(`^---(\s|$)`)

// readManifest splits a manifest file into its documents; comments-only
// and empty documents (Helm leaves them) are skipped. Every document must
// name its apiVersion, kind and metadata.name.
func readManifest(path string) ([]*document, error) {
	data, err := readInput(path)
	if err != nil {
		return nil, err
	}
	if err := strictyaml.CheckText(path, data, MaxFileSize); err != nil {
		return nil, err
	}
	var docs []*document
	var errs ErrorList
	for _, part := range splitDocuments(data) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(part.data, &head); err != nil {
			errs = append(errs, &FieldError{File: path, Line: part.line, Msg: fmt.Sprintf("document %d is not valid YAML: %v", len(docs)+1, err)})
			continue
		}
		if head.APIVersion == "" && head.Kind == "" && isBlank(part.data) {
			continue
		}
		d := &document{Index: len(docs) + 1, Line: part.line, APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name, data: part.data}
		if d.APIVersion == "" || d.Kind == "" || d.Name == "" {
			errs = append(errs, &FieldError{File: path, Line: part.line, Msg: d.String() + ": every document needs apiVersion, kind and metadata.name"})
		}
		docs = append(docs, d)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(docs) == 0 {
		return nil, &FieldError{File: path, Msg: "holds no Kubernetes object"}
	}
	return docs, nil
}

type part struct {
	line int
	data []byte
}

// splitDocuments cuts data at its "---" lines, keeping where each part
// starts.
func splitDocuments(data []byte) []part {
	var out []part
	start, cur := 1, &bytes.Buffer{}
	for i, l := range strings.SplitAfter(string(data), "\n") {
		if separatorRE.MatchString(l) {
			out = append(out, part{line: start, data: cur.Bytes()})
			start, cur = i+2, &bytes.Buffer{}
			continue
		}
		cur.WriteString(l)
	}
	return append(out, part{line: start, data: cur.Bytes()})
}

// isBlank is whether a document holds only comments and white space.
func isBlank(data []byte) bool {
	for _, l := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// decode decodes the document strictly into v; its errors name the file,
// the document, the field and the line in the file.
func (d *document) decode(path string, v any) error {
	errs, _ := strictyaml.Decode(path, d.data, v, "a field the pinned Kubernetes and Karpenter APIs do not know")
	for _, e := range errs {
		if e.Line > 0 {
			e.Line += d.Line - 1
		}
		if e.Path != "" {
			e.Path = d.String() + ": " + e.Path
		} else {
			e.Msg = d.String() + ": " + e.Msg
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// pick chooses the document of one of kinds called name, or, without a
// name, the only one of those kinds. what says what is looked for, in
// errors ("a NodePool").
func pick(path string, docs []*document, kinds map[string]string, name, what, nameField string) (*document, error) {
	var found []*document
	for _, d := range docs {
		if api, ok := kinds[d.Kind]; ok && d.APIVersion == api && (name == "" || d.Name == name) {
			found = append(found, d)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0 && name != "":
		return nil, fmt.Errorf("%s holds no %s called %q (it holds: %s)", path, what, name, listDocs(docs))
	case len(found) == 0:
		return nil, fmt.Errorf("%s holds no %s (it holds: %s)", path, what, listDocs(docs))
	default:
		return nil, fmt.Errorf("%s holds %d of %s (%s): name one with %s", path, len(found), what, listDocs(found), nameField)
	}
}

func listDocs(docs []*document) string {
	var s []string
	for _, d := range docs {
		s = append(s, d.Kind+"/"+d.Name)
	}
	return strings.Join(s, ", ")
}

// decodeLoose decodes the document without checking its fields: for an
// object of a kind nodeprint does not model (an EC2NodeClass), read only to
// say what is ignored.
func (d *document) decodeLoose(v any) error { return yaml.Unmarshal(d.data, v) }
