package strictyaml

import (
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Positions maps field paths to the line they are on, from the YAML node
// tree: strict JSON decoding knows the path of a bad field, YAML knows its line.
type Positions struct{ root *yaml.Node }

// NewPositions parses data into a node tree (aliases are not expanded).
func NewPositions(data []byte) (*Positions, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return &Positions{}, nil
	}
	return &Positions{root: doc.Content[0]}, nil
}

var segmentRE = regexp.MustCompile(`([^.\[\]]+)|\[(\d+)\]`)

// Line returns the line of the deepest node along path that exists (the
// key's line for a mapping entry), or 0.
func (p *Positions) Line(path string) int {
	if p == nil || p.root == nil {
		return 0
	}
	n, best := p.root, p.root.Line
	for _, m := range segmentRE.FindAllStringSubmatch(path, -1) {
		switch {
		case m[2] != "": // [i]
			i, _ := strconv.Atoi(m[2])
			if n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return best
			}
			n = n.Content[i]
			best = n.Line
		default:
			key := strings.Trim(m[1], `"`)
			if n.Kind == yaml.SequenceNode && len(n.Content) > 0 {
				// A type error's path has no index: look in the first item.
				n = n.Content[0]
			}
			if n.Kind != yaml.MappingNode {
				return best
			}
			found := false
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == key {
					best = n.Content[j].Line
					n = n.Content[j+1]
					found = true
					break
				}
			}
			if !found {
				return best
			}
		}
	}
	return best
}

// Duplicates lists every mapping key that appears twice in its mapping,
// as field paths with the line of the second one: the YAML-to-JSON
// conversion would keep one of them silently.
func (p *Positions) Duplicates() []FieldError {
	if p == nil || p.root == nil {
		return nil
	}
	var out []FieldError
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if depth > maxDepth {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			seen := map[string]bool{}
			for j := 0; j+1 < len(n.Content); j += 2 {
				k := n.Content[j].Value
				child := k
				if path != "" {
					child = path + "." + k
				}
				if seen[k] {
					out = append(out, FieldError{Path: child, Line: n.Content[j].Line, Msg: "duplicate field"})
				}
				seen[k] = true
				walk(n.Content[j+1], child, depth+1)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, path+"["+strconv.Itoa(i)+"]", depth+1)
			}
		}
	}
	walk(p.root, "", 0)
	return out
}

// maxDepth bounds the walk; deeper documents are not nodeprint's.
const maxDepth = 100

// Find returns the path and line of the first scalar whose value is v, in
// document order; "" when none is. A custom decoder's error knows the
// value it refused but not where it was (encoding/json does not wrap it).
func (p *Positions) Find(v string) (path string, line int) {
	if p == nil || p.root == nil {
		return "", 0
	}
	var walk func(n *yaml.Node, at string, depth int) bool
	walk = func(n *yaml.Node, at string, depth int) bool {
		if depth > maxDepth {
			return false
		}
		switch n.Kind {
		case yaml.ScalarNode:
			if n.Value == v {
				path, line = at, n.Line
				return true
			}
		case yaml.MappingNode:
			for j := 0; j+1 < len(n.Content); j += 2 {
				child := n.Content[j].Value
				if at != "" {
					child = at + "." + child
				}
				if walk(n.Content[j+1], child, depth+1) {
					return true
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if walk(c, at+"["+strconv.Itoa(i)+"]", depth+1) {
					return true
				}
			}
		}
		return false
	}
	walk(p.root, "", 0)
	return path, line
}
