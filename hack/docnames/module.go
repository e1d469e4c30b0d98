package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// module is what a doc may name: the module's Go packages and its top-level
// directories.
type module struct {
	// byName holds the importable packages (not main, not test-only) by
	// their package clause.
	byName map[string][]*pkg
	// byDir holds the packages by directory relative to the module root,
	// with slashes.
	byDir map[string]*pkg
	// topDirs are the directories at the module root (./bin excluded).
	topDirs map[string]bool
}

// pkg is the declarations of one directory's Go files, test files included.
type pkg struct {
	dir     string
	decls   map[string]bool
	members map[string]map[string]bool // type -> its methods and struct fields
}

func newModule() *module {
	return &module{byName: map[string][]*pkg{}, byDir: map[string]*pkg{}, topDirs: map[string]bool{}}
}

// loadModule parses every Go file of the module rooted at root, skipping
// nested modules, testdata, hidden directories and ./bin.
func loadModule(root string) (*module, error) {
	m := newModule()
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() && !skipDir(e.Name()) {
			m.topDirs[e.Name()] = true
		}
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if skipDir(d.Name()) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (hack/k8s, hack/traefik)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		m.add(filepath.ToSlash(rel), f, strings.HasSuffix(path, "_test.go"))
		return nil
	})
	return m, err
}

func skipDir(name string) bool {
	return name == "bin" || name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// add records the declarations of file f of directory dir; isTest says
// whether it is a _test.go file.
func (m *module) add(dir string, f *ast.File, isTest bool) {
	p := m.byDir[dir]
	if p == nil {
		p = &pkg{dir: dir, decls: map[string]bool{}, members: map[string]map[string]bool{}}
		m.byDir[dir] = p
	}
	// Test files share the package's declarations (docs name tests) but do
	// not make a test-only directory importable.
	if name := f.Name.Name; !isTest && name != "main" && !contains(m.byName[name], p) {
		m.byName[name] = append(m.byName[name], p)
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				p.decls[d.Name.Name] = true
				continue
			}
			if t := recvType(d.Recv.List[0].Type); t != "" {
				p.member(t, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					p.decls[s.Name.Name] = true
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, field := range st.Fields.List {
							for _, n := range field.Names {
								p.member(s.Name.Name, n.Name)
							}
							if len(field.Names) == 0 { // embedded: named by its type
								if t := recvType(field.Type); t != "" {
									p.member(s.Name.Name, t)
								}
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.decls[n.Name] = true
					}
				}
			}
		}
	}
}

func (p *pkg) member(typ, name string) {
	if p.members[typ] == nil {
		p.members[typ] = map[string]bool{}
	}
	p.members[typ][name] = true
}

// recvType is the type name of a receiver or embedded field: T, *T, T[K],
// pkg.T.
func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	}
	return ""
}

func contains(ps []*pkg, p *pkg) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// anyDecl says whether some package of the module declares name at top
// level.
func (m *module) anyDecl(name string) bool {
	for _, p := range m.byDir {
		if p.decls[name] {
			return true
		}
	}
	return false
}
