// Command catalog derives a small instance-type catalog from the KWOK
// provider's AWS-shaped example (aws_instance_types.json in the pinned
// Karpenter module, copied to bin/ by make tools): the Linux entries of the
// named families, sorted by name. fixtures/catalogs/aws-small.json is its
// output:
//
//	go run ./tools/catalog -families m5,c5,r5,m6g,c6g -out fixtures/catalogs/aws-small.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

func main() {
	in := flag.String("in", "", "the AWS-shaped catalog (default: the pinned Karpenter module's kwok/examples/aws_instance_types.json in bin/)")
	families := flag.String("families", "m5,c5,r5,m6g,c6g", "comma-separated instance families to keep")
	out := flag.String("out", "", "output file (default: stdout)")
	flag.Parse()
	if err := run(*in, strings.Split(*families, ","), *out); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}

func run(in string, families []string, out string) error {
	if in == "" {
		tc, err := toolchain.Find()
		if err != nil {
			return err
		}
		in = strings.TrimSuffix(tc.Paths().InstanceTypes, "instance_types.json") + "aws_instance_types.json"
	}
	b, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("failed to read the catalog (run make tools): %w", err)
	}
	var all []map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return fmt.Errorf("failed to parse %s: %w", in, err)
	}
	var kept []map[string]any
	for _, it := range all {
		name, _ := it["name"].(string)
		family, _, _ := strings.Cut(name, ".")
		oss, _ := it["operatingSystems"].([]any)
		if slices.Contains(families, family) && slices.Contains(oss, any("linux")) {
			kept = append(kept, it)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i]["name"].(string) < kept[j]["name"].(string) })
	if len(kept) == 0 {
		return fmt.Errorf("no Linux instance type of families %v in %s", families, in)
	}
	enc, err := json.MarshalIndent(kept, "", " ")
	if err != nil {
		return err
	}
	enc = append(enc, '\n')
	if out == "" {
		_, err = os.Stdout.Write(enc)
		return err
	}
	return os.WriteFile(out, enc, 0o644)
}
