package offline

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Document is one object of the input: where it came from and its JSON.
type Document struct {
	// File is the path it was read from, "-" for standard input.
	File string
	// Index counts the documents of File from 0, as kubectl's errors do;
	// the items of a List share their List's index.
	Index int
	// Object is the document as the API server would decode it.
	Object *unstructured.Unstructured
}

// ErrUnusable wraps what makes the input unusable as a whole: a file that
// cannot be read, a document that is not YAML or JSON.
var ErrUnusable = errors.New("unusable input")

// Read reads every document of paths: files, directories (their .yaml,
// .yml and .json files, in lexical order, not those of subdirectories:
// kubectl's -f without -R) and "-" for stdin. Empty documents are skipped; a List's items are
// documents of their own, as kubectl applies them.
func Read(paths []string, stdin io.Reader) ([]Document, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no input: name files, directories or - for standard input with -f", ErrUnusable)
	}
	var docs []Document
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
		}
		for _, f := range files {
			var data []byte
			if f == "-" {
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(f)
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
			}
			d, err := Parse(f, data)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

// expand lists the files a path names.
func expand(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	return files, nil
}

// Parse splits data, YAML or JSON, into its documents.
func Parse(file string, data []byte) ([]Document, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []Document
	for index := 0; ; index++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrUnusable, file, err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: document %d: %w", ErrUnusable, file, index, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			index-- // kubectl counts only documents with content
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("%w: %s: document %d: %w", ErrUnusable, file, index, err)
		}
		if obj.IsList() {
			err := obj.EachListItem(func(item runtime.Object) error {
				docs = append(docs, Document{File: file, Index: index, Object: item.(*unstructured.Unstructured)})
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("%w: %s: document %d: %w", ErrUnusable, file, index, err)
			}
			continue
		}
		docs = append(docs, Document{File: file, Index: index, Object: obj})
	}
}
