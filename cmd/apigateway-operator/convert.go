package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"example.com/apigateway-operator/offline"
)

const convertSynopsis = `Usage: apigateway-operator convert --to v1|v1alpha1 -f FILE|DIR|- [flags]

Rewrites APIGateways in another API version with the conversion webhook's
own functions, so reading the result back gives the same object: what
v1alpha1 cannot express is kept in the conversion.example.com/v1-spec
annotation, as the API server keeps it. Objects already in that version are
printed as they are; other kinds are skipped with a note on standard error.
Needs no cluster. Exit status: 0 converted, 1 an object could not be, 2
unusable input.`

func runConvert(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var (
		in     files
		to     string
		output string
	)
	fs := newFlagSet("convert", convertSynopsis, stdout)
	fs.Var(&in, "f", "File, directory (its .yaml, .yml and .json files) or - for standard input; repeatable.")
	fs.StringVar(&to, "to", "", "The API version to write: v1 or v1alpha1.")
	fs.StringVar(&output, "o", "yaml", "Output: yaml (documents separated by ---) or json (one object, or a List of them).")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	in = append(in, fs.Args()...)
	if !slices.Contains(offline.Versions, to) {
		fmt.Fprintf(stderr, "error: --to %q: want one of %v\n", to, offline.Versions)
		return 2
	}
	if output != "yaml" && output != "json" {
		fmt.Fprintf(stderr, "error: -o %q: want yaml or json\n", output)
		return 2
	}
	docs, err := offline.Read(in, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	code := 0
	var out []*unstructured.Unstructured
	for _, d := range docs {
		converted, err := offline.Convert(d.Object, to)
		if err != nil {
			fmt.Fprintf(stderr, "%s#%d %s %s: %v\n", d.File, d.Index, d.Object.GetKind(), d.Object.GetName(), err)
			if offline.IsAPIGateway(d.Object) {
				code = 1
			}
			continue
		}
		out = append(out, converted)
	}
	if err := writeObjects(out, output, stdout); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	return code
}

// writeObjects prints objects as YAML documents, or as JSON: the object
// alone, or a List of several as kubectl prints them.
func writeObjects(objs []*unstructured.Unstructured, output string, w io.Writer) error {
	if output == "json" {
		var v any = map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}
		if len(objs) == 1 {
			v = objs[0].Object
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	for i, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
