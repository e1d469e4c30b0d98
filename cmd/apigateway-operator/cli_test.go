package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run the real binary, version stamped with -ldflags -X as make
// build and the Dockerfile stamp it, so they see every flag registered
// anywhere (controller-runtime's --kubeconfig included). It is built with
// the test binary's own race setting, so the build reuses the packages
// already compiled for the test and only links.

const testVersion = "v9.8.7-test"

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// operatorBinary builds the operator once per test run, version stamped.
func operatorBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "apigateway-operator-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "apigateway-operator")
		args := []string{"build", "-ldflags", "-X main.version=" + testVersion, "-o", binary}
		if raceEnabled() {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, ".")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w: %s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binary
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

func TestVersionFlag(t *testing.T) {
	out, err := exec.Command(operatorBinary(t), "--version").Output()
	require.NoError(t, err, "--version exits 0")
	assert.Equal(t, "apigateway-operator "+testVersion+"\n", string(out))
}

func TestVersionString(t *testing.T) {
	tests := map[string]struct {
		stamped string
		info    *debug.BuildInfo
		want    string
	}{
		"stamped wins":      {stamped: "v1.2.3", info: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.1"}}, want: "v1.2.3"},
		"no build info":     {want: "dev"},
		"module version":    {info: &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, want: "v1.4.0"},
		"devel without vcs": {info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: "dev"},
		"vcs revision": {info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"},
		}}, want: "dev-0123456789ab"},
		"dirty tree": {info: &debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
		}}, want: "dev-abc-dirty"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, versionString(tc.stamped, tc.info))
		})
	}
}

// undocumentedFlags are --help flags the flags table need not list:
// zap's logging flags (documented by controller-runtime) and the
// --kubeconfig controller-runtime registers.
func undocumentedFlag(name string) bool {
	return strings.HasPrefix(name, "zap-") || name == "kubeconfig"
}

// TestHelpMatchesFlagsTable keeps the flags table of docs/platform.md (the
// platform team's page) and --help in step:
// every flag the table names exists, and every flag of --help is in the
// table. On failure it prints the rows to add.
func TestHelpMatchesFlagsTable(t *testing.T) {
	cmd := exec.Command(operatorBinary(t), "--help")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "--help exits 0: %s", out)
	help := parseHelp(string(out))
	require.NotEmpty(t, help)

	page, err := os.ReadFile(filepath.Join("..", "..", flagsDoc))
	require.NoError(t, err)
	documented := docFlags(string(page))
	require.NotEmpty(t, documented, flagsDoc+` has a "## Flags" table naming flags as `+"`--flag`")

	for _, name := range documented {
		_, ok := help[name]
		assert.True(t, ok, "%s documents --%s, which --help does not list", flagsDoc, name)
	}
	var missing []string
	for name, f := range help {
		if !undocumentedFlag(name) && !slices.Contains(documented, name) {
			missing = append(missing, f.row())
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("flags of --help missing from %s's flags table; add these rows:\n%s", flagsDoc, strings.Join(missing, "\n"))
	}
}

// helpFlag is one flag as --help prints it.
type helpFlag struct {
	name, usage, def string
}

// row is the flag as a row of the flags table.
func (f helpFlag) row() string {
	def := f.def
	if def != "" {
		def = "`" + def + "`"
	}
	return fmt.Sprintf("| `--%s` | %s | %s |", f.name, def, f.usage)
}

var (
	helpFlagLine = regexp.MustCompile(`^  -([a-z0-9][a-z0-9-]*)`)
	helpDefault  = regexp.MustCompile(`\s*\(default (.*)\)$`)
)

// parseHelp reads the flag package's usage output: "  -name type" lines,
// each followed by indented usage lines ending in "(default ...)".
func parseHelp(out string) map[string]helpFlag {
	flags := map[string]helpFlag{}
	var cur *helpFlag
	flush := func() {
		if cur != nil {
			if m := helpDefault.FindStringSubmatch(cur.usage); m != nil {
				cur.def = strings.Trim(m[1], `"`)
				cur.usage = strings.TrimSuffix(cur.usage, m[0])
			}
			flags[cur.name] = *cur
		}
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := helpFlagLine.FindStringSubmatch(line); m != nil {
			flush()
			cur = &helpFlag{name: m[1]}
			continue
		}
		if cur != nil && strings.HasPrefix(line, "    \t") {
			cur.usage = strings.TrimSpace(cur.usage + " " + strings.TrimSpace(line))
		}
	}
	flush()
	return flags
}

// flagsDoc is the page, relative to the repository's root, whose "## Flags"
// table documents every flag.
const flagsDoc = "docs/platform.md"

var docFlag = regexp.MustCompile("`--([a-z0-9][a-z0-9-]*)`")

// docFlags returns the flag names in backticks in the table rows of a
// page's "## Flags" section.
func docFlags(page string) []string {
	_, section, ok := strings.Cut(page, "\n## Flags\n")
	if !ok {
		return nil
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var names []string
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		for _, m := range docFlag.FindAllStringSubmatch(line, -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
	}
	return names
}

func TestDocFlags(t *testing.T) {
	page := "# x\n\n## Flags\n\ntext `--not-in-table`\n\n| flag | default |\n|---|---|\n| `--a-b` | 1 | see `--c` |\n| `--cert-*` | | |\n\n## Next\n| `--later` |\n"
	assert.Equal(t, []string{"a-b", "c"}, docFlags(page))
	assert.Nil(t, docFlags("# no flags section\n"))
}

func TestParseHelp(t *testing.T) {
	out := "Usage of x:\n  -cert-dir string\n    \tDirectory holding it. (default \"/tmp/certs\")\n  -leader-elect\n    \tElect a leader\n    \tamong replicas.\n"
	assert.Equal(t, map[string]helpFlag{
		"cert-dir":     {name: "cert-dir", usage: "Directory holding it.", def: "/tmp/certs"},
		"leader-elect": {name: "leader-elect", usage: "Elect a leader among replicas."},
	}, parseHelp(out))
}
