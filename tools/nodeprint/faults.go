package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/faults"
)

func newFaultsCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "faults",
		Short: "List the fault catalog: each fault's layer, mechanism and parameters",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			for _, d := range faults.Catalog() {
				fmt.Fprintf(stdout, "%s (%s)\n    %s\n", d.Name, d.Layer, d.Summary)
				for _, p := range d.Params {
					def := p.Default
					if def == "" {
						def = "-"
					}
					fmt.Fprintf(stdout, "    param %-14s %-9s default %-8s %s\n", p.Name, p.Kind, def, p.Help)
				}
			}
			return nil
		},
	}
}
