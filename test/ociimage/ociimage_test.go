package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The layout holds what `ctr images import` reads: index.json naming the
// image and pointing at its manifest, every blob under its digest, and a
// layer with the files and the folders they sit in.
func TestWrite(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, Image{
		Name: "example.test/echo:1",
		Files: []File{
			{Path: "/usr/bin/echo", Mode: 0o755, Data: []byte("binary")},
			{Path: "/bin", Mode: fs.ModeSymlink | 0o777, Link: "usr/bin"},
		},
		Config: Config{Entrypoint: []string{"/usr/bin/echo"}, User: "101:101"},
	}))
	entries := readTar(t, &buf)
	require.Contains(t, entries, "oci-layout")

	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	require.NoError(t, json.Unmarshal(entries["index.json"], &index))
	require.Len(t, index.Manifests, 1)
	require.Equal(t, "example.test/echo:1", index.Manifests[0].Annotations[nameAnnotation])
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	require.NoError(t, json.Unmarshal(blob(t, entries, index.Manifests[0]), &manifest))
	var config struct {
		Config struct{ User string }
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	require.NoError(t, json.Unmarshal(blob(t, entries, manifest.Config), &config))
	require.Equal(t, "101:101", config.Config.User)
	require.Equal(t, []string{manifest.Layers[0].Digest}, config.RootFS.DiffIDs)

	layer := readTar(t, bytes.NewReader(blob(t, entries, manifest.Layers[0])))
	require.Equal(t, []byte("binary"), layer["usr/bin/echo"])
	require.Contains(t, layer, "usr/")
	require.Contains(t, layer, "usr/bin/")
	require.Contains(t, layer, "bin")
}

// blob is the blob d describes, checked against its digest and size.
func blob(t *testing.T, entries map[string][]byte, d descriptor) []byte {
	t.Helper()
	data, ok := entries["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
	require.True(t, ok, "no blob %s", d.Digest)
	require.Equal(t, d.Digest, digest(data))
	require.Equal(t, d.Size, len(data))
	return data
}

func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[hdr.Name] = data
	}
}
