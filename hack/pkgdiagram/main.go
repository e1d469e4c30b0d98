// Command pkgdiagram writes the package diagram of docs/architecture.md from
// `go list`: every package of the module outside test/ and hack/ (which ship
// nothing), an arrow for each import between them, and a table of what each
// package is, from the first sentence of its doc comment. It rewrites the
// text between the markers
//
//	<!-- BEGIN GENERATED: packages -->
//	<!-- END GENERATED: packages -->
//
// so the diagram cannot drift from the imports: `make docs` runs it and
// `make verify` fails when the committed doc differs.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

const (
	begin = "<!-- BEGIN GENERATED: packages -->"
	end   = "<!-- END GENERATED: packages -->"
)

type goPackage struct {
	ImportPath string
	Name       string
	Doc        string
	Imports    []string
}

func main() {
	doc := flag.String("doc", "docs/architecture.md", "the Markdown file whose marked section is rewritten")
	flag.Parse()
	if err := run(*doc); err != nil {
		fmt.Fprintln(os.Stderr, "pkgdiagram:", err)
		os.Exit(1)
	}
}

func run(doc string) error {
	module, err := goOutput("list", "-m")
	if err != nil {
		return err
	}
	listed, err := goOutput("list", "-json=ImportPath,Name,Doc,Imports", "./...")
	if err != nil {
		return err
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(listed))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		pkgs = append(pkgs, p)
	}
	section := render(strings.TrimSpace(module), pkgs)
	text, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	out, err := replace(string(text), section)
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	if out == string(text) {
		return nil
	}
	return os.WriteFile(doc, []byte(out), 0o644)
}

func goOutput(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// shipped says whether a package (by path relative to the module) is drawn:
// test/ and hack/ ship nothing.
func shipped(rel string) bool {
	return rel != "" && !strings.HasPrefix(rel, "test/") && !strings.HasPrefix(rel, "hack/")
}

// render returns the generated section: a Mermaid flowchart of the imports
// between shipped packages, grouped by top-level directory, and a table of
// their doc comments' first sentences.
func render(module string, pkgs []goPackage) string {
	rel := func(path string) string {
		if path == module {
			return "."
		}
		return strings.TrimPrefix(path, module+"/")
	}
	var drawn []goPackage
	isDrawn := map[string]bool{}
	for _, p := range pkgs {
		if r := rel(p.ImportPath); r != p.ImportPath && shipped(r) {
			drawn = append(drawn, p)
			isDrawn[p.ImportPath] = true
		}
	}
	sort.Slice(drawn, func(i, j int) bool { return drawn[i].ImportPath < drawn[j].ImportPath })

	groups := map[string][]string{}
	var order []string
	for _, p := range drawn {
		top := strings.SplitN(rel(p.ImportPath), "/", 2)[0]
		if _, ok := groups[top]; !ok {
			order = append(order, top)
		}
		groups[top] = append(groups[top], rel(p.ImportPath))
	}

	var b strings.Builder
	b.WriteString(begin + "\n")
	b.WriteString("<!-- Written by `make docs` (hack/pkgdiagram, from `go list`); do not edit. -->\n\n")
	b.WriteString("```mermaid\nflowchart TB\n")
	for _, top := range order {
		members := groups[top]
		if len(members) == 1 && members[0] == top {
			fmt.Fprintf(&b, "    %s[\"%s\"]\n", id(top), top)
			continue
		}
		fmt.Fprintf(&b, "    subgraph %s_dir[\"%s/\"]\n", id(top), top)
		for _, m := range members {
			fmt.Fprintf(&b, "        %s[\"%s\"]\n", id(m), m)
		}
		b.WriteString("    end\n")
	}
	for _, p := range drawn {
		var to []string
		for _, imp := range p.Imports {
			if isDrawn[imp] {
				to = append(to, id(rel(imp)))
			}
		}
		sort.Strings(to)
		if len(to) > 0 {
			fmt.Fprintf(&b, "    %s --> %s\n", id(rel(p.ImportPath)), strings.Join(to, " & "))
		}
	}
	b.WriteString("```\n\n")
	b.WriteString("| package | what it is (its doc comment) |\n|---|---|\n")
	for _, p := range drawn {
		what := firstSentence(p.Doc)
		if what == "" {
			what = "(no doc comment)"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", rel(p.ImportPath), strings.ReplaceAll(what, "|", `\|`))
	}
	b.WriteString(end)
	return b.String()
}

// id is a Mermaid node id for a package path.
func id(rel string) string {
	return "p_" + strings.NewReplacer("/", "_", "-", "_", ".", "_").Replace(rel)
}

// firstSentence is go list's Doc (already the comment's first sentence)
// without the "Package x" or "Command x" that opens it.
func firstSentence(doc string) string {
	for _, prefix := range []string{"Package ", "Command "} {
		if strings.HasPrefix(doc, prefix) {
			if _, rest, ok := strings.Cut(doc[len(prefix):], " "); ok {
				return rest
			}
		}
	}
	return doc
}

// replace swaps the text between the markers (kept) for section.
func replace(text, section string) (string, error) {
	i := strings.Index(text, begin)
	j := strings.Index(text, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q markers", begin, end)
	}
	return text[:i] + section + text[j+len(end):], nil
}
