package main

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	const m = "example.com/op"
	pkgs := []goPackage{
		{ImportPath: m + "/webhooks", Doc: "Package webhooks holds the webhooks.", Imports: []string{m + "/api/v1", "fmt", m + "/test/testenv"}},
		{ImportPath: m + "/api/v1", Doc: "Package v1 holds the v1 API.", Imports: []string{"k8s.io/apimachinery"}},
		{ImportPath: m + "/api/v1/gen", Doc: "Command gen writes | things.", Imports: []string{m + "/api/v1", m + "/webhooks"}},
		{ImportPath: m + "/test/testenv", Imports: []string{m + "/api/v1"}},
		{ImportPath: m + "/hack/run", Imports: []string{m + "/webhooks"}},
		{ImportPath: m + "/lease"},
	}
	got := render(m, pkgs)
	want := begin + `
<!-- Written by ` + "`make docs`" + ` (hack/pkgdiagram, from ` + "`go list`" + `); do not edit. -->

` + "```mermaid" + `
flowchart TB
    subgraph p_api_dir["api/"]
        p_api_v1["api/v1"]
        p_api_v1_gen["api/v1/gen"]
    end
    p_lease["lease"]
    p_webhooks["webhooks"]
    p_api_v1_gen --> p_api_v1 & p_webhooks
    p_webhooks --> p_api_v1
` + "```" + `

| package | what it is (its doc comment) |
|---|---|
| ` + "`api/v1`" + ` | holds the v1 API. |
| ` + "`api/v1/gen`" + ` | writes \| things. |
| ` + "`lease`" + ` | (no doc comment) |
| ` + "`webhooks`" + ` | holds the webhooks. |
` + end
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestReplace(t *testing.T) {
	doc := "# A\n\n" + begin + "\nold\n" + end + "\n\ntail\n"
	got, err := replace(doc, begin+"\nnew\n"+end)
	if err != nil || got != "# A\n\n"+begin+"\nnew\n"+end+"\n\ntail\n" {
		t.Errorf("replace = %q, %v", got, err)
	}
	if _, err := replace("# no markers\n", "x"); err == nil || !strings.Contains(err.Error(), "markers") {
		t.Errorf("replace without markers: err = %v", err)
	}
}
