package controlplane

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// mount is a line of /proc/self/mountinfo: where it is mounted and the
// file system type.
type mount struct {
	target, fstype string
}

// mounts are this mount namespace's mounts, in the order they were made.
func mounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	s := bufio.NewScanner(f)
	for s.Scan() {
		// The mount point is the fifth field; the file system type
		// follows the " - " separator, after the optional fields.
		line := s.Text()
		fields := strings.Fields(line)
		_, after, ok := strings.Cut(line, " - ")
		rest := strings.Fields(after)
		if !ok || len(fields) < 5 || len(rest) == 0 {
			continue
		}
		out = append(out, mount{target: unescapeMountPath(fields[4]), fstype: rest[0]})
	}
	return out, s.Err()
}

// unescapeMountPath decodes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
