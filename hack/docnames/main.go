// Command docnames fails when a hand-written doc names Go code or a file of
// the repository that does not exist, or links to a file or heading that does
// not exist, so the docs cannot drift from the code unnoticed. hack/verify.sh
// (make verify) runs it from the module root:
//
//	go run ./hack/docnames README.md docs/*.md
//
// # What counts as a reference
//
// Only inline code spans are read (`like this`); fenced and indented code
// blocks hold shell, YAML and diagrams, and prose outside backticks is never a
// reference. A span is taken for a reference, and checked, only in these
// forms (a trailing "()" is ignored):
//
//   - pkg.Name or pkg.Name.Member, where pkg is the name of one of the
//     module's packages (its package clause, or the last element of its
//     directory) or its directory relative to the module root
//     (api/v1/defaults.Table), and Name and Member are Go identifiers of
//     which Name contains an upper-case letter. Name must be a top-level
//     declaration (func, type, var, const; test files included) of a package
//     of that name; Member a method of type Name, or a field of the struct
//     Name. The upper-case rule keeps file names and field paths out:
//     `nginx.conf`, `tls.crt`, `spec.routes`, `status.claims` are prose even
//     where a package shares the first word; an all-lower-case unexported
//     name (`controller.render`) is therefore not checked either. A span
//     whose first word names no package of the module (`http.Server`,
//     `timeouts.connectSeconds`) is not a reference: another library's names
//     are not ours to check.
//   - a path relative to the module root whose first element is a top-level
//     directory holding Go code (api/, controller/, test/, hack/, ...), such
//     as `test/routetable`, `api/v1/validation`, `lease/lease.go` or
//     `manifests/samples/invalid/*.yaml`: it must name a file or directory
//     (a glob must match one). ./bin is built, never committed, and is not
//     checked.
//
// Links, [text](target) outside code, are checked too: a relative target
// must exist (relative to the doc), and a #fragment must be the anchor of a
// heading of the target doc, spelt as GitHub spells it (lower case,
// punctuation other than - and _ dropped, spaces as -, a repeated heading
// gets -1, -2, ...). Links with a scheme (https:, mailto:) are not checked.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: docnames FILE.md...")
		os.Exit(2)
	}
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "docnames:", err)
		os.Exit(2)
	}
	code, err := loadModule(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docnames:", err)
		os.Exit(2)
	}
	failed := false
	for _, doc := range os.Args[1:] {
		rel, err := filepath.Rel(root, mustAbs(doc))
		if err != nil {
			rel = doc
		}
		problems, err := checkDoc(code, root, filepath.ToSlash(rel))
		if err != nil {
			fmt.Fprintln(os.Stderr, "docnames:", err)
			os.Exit(2)
		}
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
			failed = true
		}
	}
	if failed {
		fmt.Fprintln(os.Stderr, "docnames: the docs above name code, files or headings that do not exist; fix the doc (or the name)")
		os.Exit(1)
	}
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
