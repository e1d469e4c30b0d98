package main

import (
	"go/parser"
	"go/token"
	"path"
	"strings"
	"testing"
)

// fixture is a module of a few packages and files, as loadModule would read
// it.
func fixture(t *testing.T) *checker {
	t.Helper()
	sources := map[string]string{
		"controller/nginx.go":        "package controller\nfunc renderNginx() {}\nfunc Children() {}\ntype Reconciler struct{ Client int }\nfunc (r *Reconciler) Reconcile() {}\nconst ShutdownTimeout = 2",
		"controller/nginx_test.go":   "package controller\nfunc TestGolden() {}\nfunc BenchmarkRenderConfig() {}",
		"ownership/resolve.go":       "package ownership\nfunc Resolve() {}",
		"api/v1/validation/hosts.go": "package validation\nvar RouteKey = 1\nfunc pathErrors() {}",
		"api/v1/types.go":            "package v1\ntype APIGateway struct{}",
		"tracing/tracing.go":         "package tracing\nfunc Setup() {}",
		"test/tracing/trace_test.go": "package tracing\nfunc TestSpans() {}",
		"manifests/webhook/embed.go": "package webhook\nvar YAML = 1",
		"cmd/operator/main.go":       "package main\nfunc main() {}\nfunc run() {}",
		"webhooks/x_test.go":         "package webhooks_test\nfunc FuzzAdmission() {}",
	}
	mod := newModule()
	fset := token.NewFileSet()
	files := map[string]bool{}
	for name, src := range sources {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		mod.add(path.Dir(name), f, strings.HasSuffix(name, "_test.go"))
		for p := name; p != "."; p = path.Dir(p) {
			files[p] = true
		}
	}
	for _, d := range []string{"controller", "ownership", "api", "tracing", "test", "manifests", "cmd", "webhooks", "hack", "docs"} {
		mod.topDirs[d] = true
	}
	files["hack/install-nginx.sh"], files["hack"] = true, true
	files["docs/ops.md"], files["docs"] = true, true
	docs := map[string]string{
		"docs/ops.md": "# Operations\n\n## Faults\n\n## Webhook certificates (`--cert-mode`)\n\n## Faults\n\n```sh\n# not a heading\n```\n",
	}
	return &checker{
		mod: mod,
		exists: func(rel string) bool {
			if strings.HasSuffix(rel, "*.go") {
				dir := strings.TrimSuffix(rel, "/*.go")
				for f := range files {
					if path.Dir(f) == dir && strings.HasSuffix(f, ".go") {
						return true
					}
				}
				return false
			}
			return files[rel]
		},
		read: func(rel string) (string, error) { return docs[rel], nil },
	}
}

func TestCheckSpan(t *testing.T) {
	c := fixture(t)
	cases := map[string]struct {
		span string
		bad  bool // a reference to something that does not exist
	}{
		// Qualified names of the module's packages.
		"exported func":                      {span: "ownership.Resolve"},
		"exported const":                     {span: "controller.ShutdownTimeout"},
		"var of a nested package":            {span: "validation.RouteKey"},
		"by directory":                       {span: "api/v1/validation.RouteKey"},
		"type":                               {span: "v1.APIGateway"},
		"method":                             {span: "controller.Reconciler.Reconcile"},
		"field":                              {span: "controller.Reconciler.Client"},
		"a call":                             {span: "controller.Children()"},
		"unexported, as a call":              {span: "controller.renderNginx()"},
		"unexported, by directory":           {span: "api/v1/validation.pathErrors"},
		"a test by its package":              {span: "controller.TestGolden"},
		"gone: exported":                     {span: "ownership.Stamp", bad: true},
		"gone: unexported call":              {span: "controller.render()", bad: true},
		"gone: method":                       {span: "controller.Reconciler.Apply", bad: true},
		"gone: moved package by directory":   {span: "test/routetable.Table", bad: true},
		"gone: unexported by directory":      {span: "api/v1/validation.hostErrors", bad: true},
		"test-only package: by name unknown": {span: "tracing.TestSpans", bad: true},
		"main package: by name unknown":      {span: "main.Run"},
		// Bare test, benchmark and fuzz names.
		"test":           {span: "TestGolden"},
		"benchmark":      {span: "BenchmarkRenderConfig"},
		"external test":  {span: "FuzzAdmission"},
		"gone: test":     {span: "TestParity", bad: true},
		"gone: fuzz":     {span: "FuzzRoundTrip", bad: true},
		"not a test":     {span: "Testing"},
		"reason, prose":  {span: "RouteConflict"},
		"bare CamelCase": {span: "SpecWarnings"},
		// Prose that looks dotted: never a reference.
		"file name":                      {span: "nginx.conf"},
		"key file":                       {span: "tls.crt"},
		"field path":                     {span: "spec.routes"},
		"field path, camel":              {span: "timeouts.connectSeconds"},
		"helm value on a package name":   {span: "tracing.otlpEndpoint"},
		"helm value, three words":        {span: "webhook.clientAuth.enabled"},
		"unexported without parens":      {span: "controller.renderHTTP"},
		"another library":                {span: "http.Server"},
		"another library by import path": {span: "sigs.k8s.io/controller-runtime/pkg/webhook.Server"},
		"API group":                      {span: "apigateways.example.com"},
		"annotation":                     {span: "conversion.example.com/v1-spec"},
		"command":                        {span: "go test ./controller -update"},
		"call with arguments":            {span: "controller.Children(gw)"},
		// Paths in the repository.
		"package dir":               {span: "api/v1/validation"},
		"file":                      {span: "controller/nginx.go"},
		"dir, trailing slash":       {span: "controller/"},
		"script":                    {span: "hack/install-nginx.sh"},
		"glob":                      {span: "controller/*.go"},
		"dot slash":                 {span: "./controller/nginx.go"},
		"gone: dir":                 {span: "test/routetable", bad: true},
		"gone: file":                {span: "controller/render.go", bad: true},
		"gone: glob":                {span: "ownership/*.yaml", bad: true},
		"built, not committed":      {span: "bin/k8s/kubectl"},
		"not a top-level directory": {span: "deploy/gateways/"},
		"absolute":                  {span: "/etc/nginx/conf.d"},
		"namespace/name":            {span: "team-a/shop"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			msg := c.checkSpan(tc.span)
			if tc.bad && msg == "" {
				t.Errorf("`%s` passed; want a problem", tc.span)
			}
			if !tc.bad && msg != "" {
				t.Errorf("`%s`: %s; want none", tc.span, msg)
			}
		})
	}
}

func TestCheckLinks(t *testing.T) {
	c := fixture(t)
	doc := "# Top\n\n## Seen twice\n\n## Seen twice\n\n" +
		"[a](#top) [b](ops.md) [c](ops.md#faults) [d](ops.md#faults-1)\n" +
		"[e](ops.md#webhook-certificates---cert-mode) [f](#seen-twice-1)\n" +
		"[g](https://example.com/#x) [h](../controller/nginx.go) [i](../controller/nginx.go#L3)\n" +
		"`[not](a-link.md)`\n" +
		"[j](#nowhere) [k](missing.md) [l](ops.md#not-a-heading) [m](ops.md#operations-1)\n" +
		"[n](../../outside.md)\n"
	problems := c.check("docs/guide.md", doc)
	want := []string{
		"docs/guide.md:11: link #nowhere: docs/guide.md has no heading with the anchor #nowhere",
		"docs/guide.md:11: link missing.md: docs/missing.md does not exist",
		"docs/guide.md:11: link ops.md#not-a-heading: docs/ops.md has no heading with the anchor #not-a-heading",
		"docs/guide.md:11: link ops.md#operations-1: docs/ops.md has no heading with the anchor #operations-1",
		"docs/guide.md:12: link ../../outside.md: ../outside.md does not exist",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

func TestCodeSpans(t *testing.T) {
	cases := map[string]struct {
		text string
		want []string
	}{
		"simple":                 {text: "see `a.B` and `c`", want: []string{"a.B", "c"}},
		"double backticks":       {text: "``a `b` c``", want: []string{"a `b` c"}},
		"across a line end":      {text: "`kubectl get\n  crd`", want: []string{"kubectl get   crd"}},
		"unclosed":               {text: "a ` b", want: nil},
		"not across paragraphs":  {text: "a `b\n\nc` d", want: nil},
		"padded":                 {text: "`` `x` ``", want: []string{"`x`"}},
		"fence removed first":    {text: withoutFences("```go\n`x.Y`\n```\n`z`"), want: []string{"z"}},
		"indented fence in list": {text: withoutFences("- a\n  ```yaml\n  `x.Y`\n  ```\n`z`"), want: []string{"z"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, s := range codeSpans(tc.text) {
				got = append(got, s.text)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBenchLines(t *testing.T) {
	c := fixture(t)
	doc := "BenchmarkGone-2 1 2 ns/op in prose\n```\nBenchmarkRenderConfig-2   \t 38796\t 30984 ns/op\nBenchmarkGone/sub-2   \t 1\t 2 ns/op\nBenchmarkRenderConfig\n```\n"
	problems := c.check("docs/b.md", doc)
	want := "docs/b.md:4: BenchmarkGone (go test -bench output): no such benchmark in the module"
	if strings.Join(problems, "\n") != want {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), want)
	}
}

func TestSlugify(t *testing.T) {
	cases := map[string]string{
		"Faults":                                               "faults",
		"Webhook certificates (`--cert-mode`)":                 "webhook-certificates---cert-mode",
		"Tested with Traefik v3.7.12":                          "tested-with-traefik-v3712",
		"Ingress or Gateway API":                               "ingress-or-gateway-api",
		"What a backend receives":                              "what-a-backend-receives",
		"One APIGateway, from `kubectl apply` to its children": "one-apigateway-from-kubectl-apply-to-its-children",
		"See [Faults](#faults)":                                "see-faults",
		"snake_case and Ünïcode":                               "snake_case-and-ünïcode",
	}
	for heading, want := range cases {
		if got := slugify(heading); got != want {
			t.Errorf("slugify(%q) = %q, want %q", heading, got, want)
		}
	}
}
