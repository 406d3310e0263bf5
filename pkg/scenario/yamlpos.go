package scenario

import (
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// positions maps field paths to the line they are on, from the YAML node
// tree: strict JSON decoding knows the path of a bad field, YAML knows its line.
type positions struct{ root *yaml.Node }

func newPositions(data []byte) (*positions, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return &positions{}, nil
	}
	return &positions{root: doc.Content[0]}, nil
}

var segmentRE = regexp.MustCompile(`([^.\[\]]+)|\[(\d+)\]`)

// line returns the line of the deepest node along path that exists (the
// key's line for a mapping entry), or 0.
func (p *positions) line(path string) int {
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
