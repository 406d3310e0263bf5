package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/attribute"
)

func newRulesCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "rules",
		Short: "List the attribution rules in decision order, and the signals they read",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			rs, err := attribute.Rules()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RULE\tLAYER\tWHEN\tTITLE")
			for _, r := range rs.Rules {
				var when []string
				for _, c := range r.When {
					when = append(when, c.String())
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Layer, strings.Join(when, " and "), r.Title.En)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "\nSignals:")
			for _, s := range attribute.Signals() {
				fmt.Fprintf(stdout, "  %-34s %s\n", s.ID, s.Help)
			}
			return nil
		},
	}
}
