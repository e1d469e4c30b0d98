package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// command is a subcommand of the binary. run gets the arguments after the
// subcommand's name and returns the exit code.
type command struct {
	name    string
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands are the subcommands; the operator itself runs when the first
// argument names none of them.
var commands = []command{
	{name: "validate", summary: "check APIGateway manifests as the API server and the operator's webhooks would, with no cluster", run: runValidate},
	{name: "convert", summary: "rewrite APIGateways in another API version, as the conversion webhook does", run: runConvert},
	{name: "render", summary: "print the children the operator would create for APIGateways (ConfigMap, Deployment, Service, Ingress, PodDisruptionBudget)", run: runRender},
	{name: "routes", summary: "print the route table of a cluster or of files: backends, timeouts, and which gateway serves each route", run: runRoutes},
	{name: "status", summary: "print one gateway: its conditions, children, pods and what each serves, parents' verdicts and claims", run: runStatus},
}

// pluginName is the binary's name as a kubectl plugin: `kubectl apigateway
// validate ...` runs kubectl-apigateway with the arguments after "apigateway".
const pluginName = "kubectl-apigateway"

// subcommand returns the command args ask for and the arguments left for
// it. The operator binary runs one only when args[0] names it; as the
// kubectl plugin it always runs one, and a missing or unknown name gets
// the plugin's usage (the usage command).
func subcommand(argv0 string, args []string) (command, []string, bool) {
	if len(args) > 0 {
		for _, c := range commands {
			if c.name == args[0] {
				return c, args[1:], true
			}
		}
	}
	if strings.TrimSuffix(filepath.Base(argv0), ".exe") != pluginName {
		return command{}, nil, false
	}
	return command{name: "", run: pluginUsage}, args, true
}

// pluginUsage lists the subcommands; asked for (--help, -h, help) it exits
// 0, otherwise 2.
func pluginUsage(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	asked := len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")
	w, code := stderr, 2
	if asked {
		w, code = stdout, 0
	} else if len(args) > 0 {
		fmt.Fprintf(w, "unknown command %q\n", args[0])
	}
	fmt.Fprintf(w, "Usage: kubectl apigateway COMMAND [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'kubectl apigateway COMMAND --help' for a command's flags.\n")
	return code
}

// newFlagSet is a subcommand's flag set: errors are returned, not fatal, and
// --help prints the synopsis and the flags on stdout.
func newFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and returns the exit code to stop with: -1 to go
// on, 0 after --help, 2 for a bad flag (the error goes to stderr).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	// Parse prints the usage on an error: only --help gets it.
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "error: %v (see --help)\n", err)
		return 2
	}
	return -1
}

// files is a repeatable -f flag.
type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }
