package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// checker holds what references are checked against.
type checker struct {
	mod *module
	// exists says whether a path relative to the module root (slashes, may
	// be a glob) names at least one file or directory.
	exists func(rel string) bool
	// read returns a doc's text, by path relative to the module root.
	read func(rel string) (string, error)
}

func checkDoc(mod *module, root, rel string) ([]string, error) {
	c := &checker{
		mod: mod,
		exists: func(rel string) bool {
			matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(rel)))
			return err == nil && len(matches) > 0
		},
		read: func(rel string) (string, error) {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			return string(b), err
		},
	}
	text, err := c.read(rel)
	if err != nil {
		return nil, err
	}
	return c.check(rel, text), nil
}

// check returns one line per problem of the doc rel whose text is text.
func (c *checker) check(rel, text string) []string {
	var problems []string
	prose := withoutFences(text)
	for _, b := range benchLines(text) {
		if !c.mod.anyDecl(b.text) {
			problems = append(problems, fmt.Sprintf("%s:%d: %s (go test -bench output): no such benchmark in the module", rel, b.line, b.text))
		}
	}
	for _, s := range codeSpans(prose) {
		if msg := c.checkSpan(s.text); msg != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: `%s`: %s", rel, s.line, s.text, msg))
		}
	}
	for _, l := range links(prose) {
		if msg := c.checkLink(rel, text, l.text); msg != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: link %s: %s", rel, l.line, l.text, msg))
		}
	}
	return problems
}

var (
	// qualified: pkg.Name or pkg.Name.Member, pkg a package name or a
	// directory; an optional trailing "()".
	qualifiedRE = regexp.MustCompile(`^([a-z][a-z0-9_]*(?:/[a-zA-Z0-9_-]+)*)\.([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?(?:\(\))?$`)
	// testFunc: a test, benchmark, fuzz target or example by its bare name.
	testFunc = regexp.MustCompile(`^(?:Test|Benchmark|Fuzz|Example)(?:[A-Z0-9_][A-Za-z0-9_]*)?$`)
	// benchLine: a result line of go test -bench, its sub-benchmark and
	// GOMAXPROCS suffix aside.
	benchLine = regexp.MustCompile(`^(Benchmark[A-Za-z0-9_]*)(?:/\S*)?-\d+\s`)
	// repoPath: a relative path of at least two elements, no spaces.
	repoPath  = regexp.MustCompile(`^(?:\./)?([A-Za-z0-9_-][A-Za-z0-9_.-]*)(/[A-Za-z0-9_.*-]*)+$`)
	linkRE    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// checkSpan returns why the code span s names something that does not exist,
// or "" when it does or is not a reference (see the package comment).
func (c *checker) checkSpan(s string) string {
	if m := qualifiedRE.FindStringSubmatch(s); m != nil && isReference(s, m[1], m[2]) {
		pkgRef, name, member := m[1], m[2], m[3]
		var pkgs []*pkg
		if strings.Contains(pkgRef, "/") {
			if !c.mod.topDirs[strings.SplitN(pkgRef, "/", 2)[0]] {
				return ""
			}
			p := c.mod.byDir[pkgRef]
			if p == nil {
				return fmt.Sprintf("no Go package %s in the module", pkgRef)
			}
			pkgs = []*pkg{p}
		} else {
			pkgs = c.mod.byName[pkgRef]
			if len(pkgs) == 0 {
				return "" // another library's package, or prose
			}
		}
		for _, p := range pkgs {
			if member == "" && (p.decls[name] || p.members[name] != nil) {
				return ""
			}
			if member != "" && p.members[name][member] {
				return ""
			}
		}
		dirs := make([]string, len(pkgs))
		for i, p := range pkgs {
			dirs[i] = p.dir
		}
		if member != "" {
			return fmt.Sprintf("%s has no method or field %s in package %s", name, member, strings.Join(dirs, ", "))
		}
		return fmt.Sprintf("package %s declares no %s", strings.Join(dirs, ", "), name)
	}
	if testFunc.MatchString(s) {
		if !c.mod.anyDecl(s) {
			return "no such test, benchmark, fuzz target or example in the module"
		}
		return ""
	}
	if m := repoPath.FindStringSubmatch(s); m != nil && c.mod.topDirs[m[1]] {
		p := strings.TrimSuffix(strings.TrimPrefix(s, "./"), "/")
		if !c.exists(p) {
			return "no such file or directory in the repository"
		}
	}
	return ""
}

// isReference says whether span, of the qualified form pkgRef.name..., is
// taken for Go: an exported name always; an unexported one only as a call
// (a trailing "()"), or qualified by a directory and with an upper-case
// letter (a file's extension has none), since a lower-camel word after a
// package's name is as likely a Helm value or a field path
// (`tracing.otlpEndpoint`, `webhook.clientAuth.enabled`).
func isReference(span, pkgRef, name string) bool {
	if unicode.IsUpper(rune(name[0])) || strings.HasSuffix(span, "()") {
		return true
	}
	return strings.Contains(pkgRef, "/") && strings.ToLower(name) != name
}

// checkLink returns why the link target in doc rel (whose text is text) leads
// nowhere, or "".
func (c *checker) checkLink(rel, text, target string) string {
	if strings.Contains(target, ":") && !strings.HasPrefix(target, "#") {
		return "" // https:, mailto:
	}
	file, frag, _ := strings.Cut(target, "#")
	targetRel := rel
	targetText := text
	if file != "" {
		targetRel = path.Clean(path.Join(path.Dir(rel), file))
		if strings.HasPrefix(targetRel, "../") || !c.exists(targetRel) {
			return fmt.Sprintf("%s does not exist", targetRel)
		}
		if frag == "" {
			return ""
		}
		if !strings.HasSuffix(targetRel, ".md") {
			return "" // a line anchor of a source file, say
		}
		var err error
		if targetText, err = c.read(targetRel); err != nil {
			return err.Error()
		}
	}
	if frag == "" || anchors(targetText)[frag] {
		return ""
	}
	return fmt.Sprintf("%s has no heading with the anchor #%s", targetRel, frag)
}

type located struct {
	line int
	text string
}

// benchLines returns the benchmark names of the go test -bench result lines
// in the fenced code blocks of text.
func benchLines(text string) []located {
	var out []located
	fenced := withoutFences(text)
	prose := strings.Split(fenced, "\n")
	for i, l := range strings.Split(text, "\n") {
		if prose[i] == l {
			continue // not in a code block
		}
		if m := benchLine.FindStringSubmatch(l); m != nil {
			out = append(out, located{i + 1, m[1]})
		}
	}
	return out
}

// withoutFences blanks the lines of fenced code blocks (``` or ~~~, indented
// or not, as in list items), keeping the line count.
func withoutFences(text string) string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimLeft(l, " \t")
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]+" ") == "" {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// codeSpans returns the inline code spans of text, as CommonMark reads them:
// a run of n backticks up to the next run of exactly n, across line ends
// (which become spaces), one leading and trailing space stripped.
func codeSpans(text string) []located {
	var spans []located
	line := 1
	for i := 0; i < len(text); {
		if text[i] == '\n' {
			line++
			i++
			continue
		}
		if text[i] != '`' {
			i++
			continue
		}
		n := run(text, i)
		closing := -1
		for j := i + n; j < len(text); {
			if text[j] == '`' {
				m := run(text, j)
				if m == n {
					closing = j
					break
				}
				j += m
				continue
			}
			if text[j] == '\n' && j+1 < len(text) && text[j+1] == '\n' {
				break // a span does not cross a paragraph
			}
			j++
		}
		if closing < 0 {
			i += n
			continue
		}
		content := strings.ReplaceAll(text[i+n:closing], "\n", " ")
		if len(content) > 2 && content[0] == ' ' && content[len(content)-1] == ' ' {
			content = content[1 : len(content)-1]
		}
		spans = append(spans, located{line, content})
		line += strings.Count(text[i:closing], "\n")
		i = closing + n
	}
	return spans
}

func run(text string, i int) int {
	n := 0
	for i+n < len(text) && text[i+n] == '`' {
		n++
	}
	return n
}

// links returns the targets of the inline links of text, outside code spans.
func links(text string) []located {
	// Blank the code spans, keeping newlines, so a link's line stays right
	// and a bracket in code is no link.
	b := []byte(text)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(text, i)
		end := strings.Index(text[i+n:], strings.Repeat("`", n))
		if end < 0 {
			i += n
			continue
		}
		for j := i; j < i+n+end+n; j++ {
			if b[j] != '\n' {
				b[j] = ' '
			}
		}
		i += n + end + n
	}
	blank := string(b)
	var out []located
	for _, m := range linkRE.FindAllStringSubmatchIndex(blank, -1) {
		out = append(out, located{1 + strings.Count(blank[:m[0]], "\n"), blank[m[2]:m[3]]})
	}
	return out
}

// anchors returns the anchors GitHub gives the headings of a doc.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range strings.Split(withoutFences(text), "\n") {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		slug := slugify(m[2])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// slugify spells a heading's anchor as GitHub does: the heading's text
// (markup dropped), lower-cased, without punctuation but - and _, spaces
// turned into -.
func slugify(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
