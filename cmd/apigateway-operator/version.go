package main

import (
	"runtime/debug"
)

// version is stamped at build time: go build -ldflags "-X main.version=v1.2.3"
// (make build and the Dockerfile do). Empty means an unstamped build.
var version string

// versionString is what --version prints: the stamped version, else the
// module version or VCS revision go build recorded, else "dev".
func versionString(stamped string, info *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision == "" {
		return "dev"
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if modified == "true" {
		revision += "-dirty"
	}
	return "dev-" + revision
}

// buildVersion is versionString for this binary.
func buildVersion() string {
	info, _ := debug.ReadBuildInfo()
	return versionString(version, info)
}
