package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/catalog"
)

func newCatalogCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Make instance-type catalogs for scenarios (spec.catalogFile)",
		Args:  usageArgs(cobra.NoArgs),
	}
	cmd.AddCommand(newCatalogFromEC2Cmd(stdout, stderr))
	return cmd
}

func newCatalogFromEC2Cmd(stdout, stderr io.Writer) *cobra.Command {
	var prices, offerings, region, out string
	cmd := &cobra.Command{
		Use:   "from-ec2 DESCRIBE-INSTANCE-TYPES.json --prices FILE",
		Short: "Convert `aws ec2 describe-instance-types` output and a price file into a catalog the KWOK provider reads",
		Long: `DESCRIBE-INSTANCE-TYPES.json is the output of
  aws ec2 describe-instance-types --region R --output json [--instance-types ...]
--prices is a YAML file with the region's zones and each type's on-demand price and spot price
(one for every zone, or per zone); types without a price are left out (docs/scenarios.md shows the
format). --offerings takes
  aws ec2 describe-instance-type-offerings --location-type availability-zone --region R --output json
to offer each type only in the zones that have it. The catalog (JSON, the KWOK provider's
INSTANCE_TYPES_FILE_PATH format) goes to --out or stdout; what was left out goes to stderr.
A scenario picks it with spec.catalogFile.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if prices == "" {
				return usageError{fmt.Errorf("--prices FILE is needed: describe-instance-types has no prices")}
			}
			b, notes, err := catalog.FromEC2Files(args[0], prices, offerings, region)
			for _, n := range notes {
				fmt.Fprintln(stderr, "left out:", n)
			}
			if err != nil {
				return usageError{err}
			}
			if out == "" {
				_, err = stdout.Write(b)
				return err
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return fmt.Errorf("failed to write the catalog: %w", err)
			}
			fmt.Fprintf(stderr, "catalog written to %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVar(&prices, "prices", "", "the price file (YAML: region, zones, prices per type)")
	cmd.Flags().StringVar(&offerings, "offerings", "", "describe-instance-type-offerings --location-type availability-zone output (optional)")
	cmd.Flags().StringVar(&region, "region", "", "the region the catalog is for: the price file's region and every zone must match it")
	cmd.Flags().StringVar(&out, "out", "", "write the catalog here (default: stdout)")
	return cmd
}
