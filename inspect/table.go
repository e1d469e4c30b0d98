package inspect

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// WriteTable prints r for a terminal: a heading line, then a table per
// section (conditions, children, pods, parents, claims), empty sections
// left out but pods, whose absence is news.
func WriteTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "APIGateway %s/%s: generation %d, observed %d\n", r.Namespace, r.Name, r.Generation, r.ObservedGeneration)
	fmt.Fprintf(tw, "Configuration: %s\n", orDash(short(r.Configuration)))
	section(tw, "CONDITIONS", "TYPE\tSTATUS\tREASON\tMESSAGE", len(r.Conditions), func(i int) string {
		c := r.Conditions[i]
		return strings.Join([]string{c.Type, c.Status, c.Reason, c.Message}, "\t")
	})
	section(tw, "CHILDREN", "KIND\tNAME\tREADY\tDETAIL", len(r.Children), func(i int) string {
		c := r.Children[i]
		return strings.Join([]string{c.Kind, c.Name, yesNo(c.Ready), c.Detail}, "\t")
	})
	if len(r.Pods) == 0 {
		fmt.Fprintln(tw, "\nPODS: none")
	}
	section(tw, "PODS", "NAME\tPHASE\tREADY\tRESTARTS\tSERVING\tREFUSED", len(r.Pods), func(i int) string {
		p := r.Pods[i]
		return strings.Join([]string{p.Name, p.Phase, yesNo(p.Ready), fmt.Sprint(p.Restarts), servingText(p), refusedText(p)}, "\t")
	})
	section(tw, "PARENTS", "HTTPROUTE\tGATEWAY\tCONDITIONS", len(r.Parents), func(i int) string {
		p := r.Parents[i]
		conds := make([]string, 0, len(p.Conditions))
		for _, c := range p.Conditions {
			conds = append(conds, c.Type+"="+c.Status+" ("+c.Reason+")")
		}
		return strings.Join([]string{p.HTTPRoute, p.Gateway, strings.Join(conds, ", ")}, "\t")
	})
	section(tw, "CLAIMS", "ROUTE\tSINCE\tSERVED", len(r.Claims), func(i int) string {
		c := r.Claims[i]
		served := "yes"
		if c.Lost {
			served = "no: another gateway or namespace holds it (see Accepted)"
		}
		return strings.Join([]string{c.Route, c.Since.UTC().Format(time.RFC3339), served}, "\t")
	})
	section(tw, "SCOPES", "SCOPE\tSINCE", len(r.Scopes), func(i int) string {
		s := r.Scopes[i]
		return s.Scope + "\t" + s.Since.UTC().Format(time.RFC3339)
	})
	return tw.Flush()
}

// section prints a titled table of n rows, each cleaned for the terminal;
// nothing when n is 0.
func section(w io.Writer, title, header string, n int, row func(int) string) {
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n%s\n", title, header)
	for i := range n {
		fmt.Fprintln(w, clean(row(i)))
	}
}

func servingText(p Pod) string {
	switch {
	case p.Unread != "":
		return "unknown: " + p.Unread
	case p.Serving == "":
		return "nothing yet"
	case p.Current:
		return short(p.Serving) + " (current)"
	default:
		return short(p.Serving) + " (not current)"
	}
}

func refusedText(p Pod) string {
	if p.Refused == nil {
		return "-"
	}
	return short(p.Refused.Hash) + " " + p.Refused.Reason + ": " + p.Refused.Message
}

// clean keeps a row on its line and the terminal's state as it was: the
// messages carry nginx's words and names tenants wrote, so control
// characters (a newline, an escape sequence) print as a space, tabs
// between columns excepted.
func clean(row string) string {
	return strings.Map(func(r rune) rune {
		if r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar) {
			return ' '
		}
		return r
	}, row)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
