// Package ociimage writes container images as OCI image layout tars, the
// form `ctr images import` reads, so that the local node (test/controlplane's
// Options.Node) runs the project's images without a registry. An image is
// one uncompressed layer, its config and manifest, and an index.json that
// names it (io.containerd.image.name, the name pods give as their image).
// Standard library only.
package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The OCI media types written.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
	// nameAnnotation is what containerd names an imported image by.
	nameAnnotation = "io.containerd.image.name"
)

// epoch is every file's modification time, so the same files make the
// same layer digest at every run.
var epoch = time.Unix(0, 0).UTC()

// File is one entry of the image's layer.
type File struct {
	// Path is absolute in the image ("/etc/passwd").
	Path string
	// Mode holds the permission bits and fs.ModeDir or fs.ModeSymlink.
	Mode fs.FileMode
	// Data is a regular file's content; Link a symlink's target.
	Data []byte
	Link string
	// UID and GID own it (root when zero).
	UID, GID int
}

// Config is what runs when a container starts without a command of its
// own: the subset of the OCI image configuration the tests need.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	// User is "uid" or "uid:gid".
	User       string
	WorkingDir string
}

// Image is an image to write: Name is its full reference
// ("example.local/echo:test").
type Image struct {
	Name   string
	Files  []File
	Config Config
}

// Write writes img to w as an OCI image layout tar.
func Write(w io.Writer, img Image) error {
	layer, err := layerTar(img.Files)
	if err != nil {
		return err
	}
	layerDesc := describe(mediaTypeLayer, layer)
	config, err := json.Marshal(imageConfig(img.Config, layerDesc.Digest))
	if err != nil {
		return err
	}
	configDesc := describe(mediaTypeConfig, config)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeManifest,
		"config":        configDesc,
		"layers":        []descriptor{layerDesc},
	})
	if err != nil {
		return err
	}
	manifestDesc := describe(mediaTypeManifest, manifest)
	manifestDesc.Annotations = map[string]string{nameAnnotation: img.Name}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeIndex,
		"manifests":     []descriptor{manifestDesc},
	})
	if err != nil {
		return err
	}
	out := tar.NewWriter(w)
	entries := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{blobPath(layerDesc), layer},
		{blobPath(configDesc), config},
		{blobPath(manifestDesc), manifest},
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := out.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if err := writeFile(out, &tar.Header{Name: e.name, Mode: 0o644}, e.data); err != nil {
			return err
		}
	}
	return out.Close()
}

// WriteFile writes img to the file path.
func WriteFile(path string, img Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, img); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func describe(mediaType string, data []byte) descriptor {
	return descriptor{MediaType: mediaType, Digest: digest(data), Size: len(data)}
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func blobPath(d descriptor) string {
	return "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:")
}

// imageConfig is the OCI image configuration of one layer whose
// uncompressed digest (its diff ID) is diffID.
func imageConfig(c Config, diffID string) map[string]any {
	return map[string]any{
		"created":      epoch.Format(time.RFC3339),
		"architecture": "amd64",
		"os":           "linux",
		"config": map[string]any{
			"Entrypoint": c.Entrypoint,
			"Cmd":        c.Cmd,
			"Env":        c.Env,
			"User":       c.User,
			"WorkingDir": c.WorkingDir,
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	}
}

// layerTar is the layer: files sorted by path (a directory before what it
// holds), with the directories they sit in added when not listed.
func layerTar(files []File) ([]byte, error) {
	byPath := map[string]File{}
	for _, f := range files {
		p := filepath.Clean("/" + f.Path)
		f.Path = p
		byPath[p] = f
		for dir := filepath.Dir(p); dir != "/"; dir = filepath.Dir(dir) {
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	out := tar.NewWriter(&buf)
	for _, p := range paths {
		f := byPath[p]
		hdr := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: int64(f.Mode.Perm()), Uid: f.UID, Gid: f.GID}
		switch {
		case f.Mode&fs.ModeDir != 0:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case f.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
		default:
			hdr.Typeflag = tar.TypeReg
		}
		if err := writeFile(out, hdr, f.Data); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeFile writes one entry: data only for a regular file.
func writeFile(out *tar.Writer, hdr *tar.Header, data []byte) error {
	hdr.ModTime = epoch
	if hdr.Typeflag == 0 {
		hdr.Typeflag = tar.TypeReg
	}
	if hdr.Typeflag == tar.TypeReg {
		hdr.Size = int64(len(data))
	}
	if err := out.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	_, err := out.Write(data)
	return err
}

// HostFiles copies files of this machine into an image at the same paths:
// each path names a file, a symlink (copied as one, its target not
// followed) or a directory (copied with everything under it).
func HostFiles(paths ...string) ([]File, error) {
	var files []File
	for _, root := range paths {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			f, err := hostFile(p)
			if err != nil {
				return err
			}
			files = append(files, f)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

func hostFile(p string) (File, error) {
	info, err := os.Lstat(p)
	if err != nil {
		return File{}, err
	}
	f := File{Path: p, Mode: info.Mode()}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		f.Link, err = os.Readlink(p)
	case info.Mode().IsRegular():
		f.Data, err = os.ReadFile(p)
	case info.IsDir():
	default:
		return File{}, fmt.Errorf("%s: neither a file, a directory nor a symlink", p)
	}
	return f, err
}
