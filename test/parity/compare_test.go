package parity

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/apigateway-operator/offline"
	"example.com/apigateway-operator/test/testenv"
)

// verdict is what one side said about one object: admitted or not, the
// field paths of its errors (sorted, "" for an error about the whole
// object), and its warnings (sorted).
type verdict struct {
	admitted bool
	fields   []string
	warnings []string
}

func (v verdict) String() string {
	if v.admitted {
		return fmt.Sprintf("admitted, warnings %q", v.warnings)
	}
	return fmt.Sprintf("refused at %q, warnings %q", v.fields, v.warnings)
}

var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// serverVerdict reads the API server's answer: err of a create, and the
// warnings it sent.
func serverVerdict(err error, warnings []string) verdict {
	v := verdict{admitted: err == nil, warnings: sorted(warnings)}
	if err == nil {
		return v
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return verdict{fields: []string{"<not an API status: " + err.Error() + ">"}}
	}
	s := status.Status()
	if m := unknownField.FindAllStringSubmatch(s.Message, -1); s.Reason == metav1.StatusReasonBadRequest && m != nil {
		for _, f := range m {
			v.fields = append(v.fields, f[1])
		}
	} else if s.Details != nil && len(s.Details.Causes) > 0 {
		for _, c := range s.Details.Causes {
			v.fields = append(v.fields, c.Field)
		}
	} else {
		v.fields = []string{""}
	}
	v.fields = sorted(v.fields)
	return v
}

// offlineVerdict reads the offline checker's verdict on one object.
func offlineVerdict(o offline.Object) verdict {
	v := verdict{admitted: o.Valid, warnings: sorted(o.Warnings)}
	for _, p := range o.Errors {
		v.fields = append(v.fields, p.Field)
	}
	v.fields = sorted(v.fields)
	return v
}

// sorted returns the distinct values of s in order; nil for none.
func sorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func (v verdict) equal(o verdict) bool {
	return v.admitted == o.admitted && slices.Equal(v.fields, o.fields) && slices.Equal(v.warnings, o.warnings)
}

// warningRecorder is a rest.WarningHandler that keeps the warnings of the
// request under way; the requests are made one at a time.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, policyMessage(text))
}

// policyMessage is a warning as offline prints it: a policy's message
// without the API server's prefix.
func policyMessage(warning string) string {
	if msg, ok := testenv.PolicyWarning(warning); ok {
		return msg
	}
	return warning
}

// take returns the warnings so far and forgets them.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	return out
}

// kubectlWarnings are the "Warning: " lines kubectl printed, sorted.
func kubectlWarnings(stderr string) []string {
	var warnings []string
	for line := range strings.SplitSeq(stderr, "\n") {
		if w, ok := strings.CutPrefix(line, "Warning: "); ok {
			warnings = append(warnings, policyMessage(w))
		}
	}
	return sorted(warnings)
}

// problemText is how kubectl prints an offline problem: the field path and
// the message, or for an unknown field the strict decoding error's words.
func problemText(p offline.Problem) string {
	switch {
	case p.Rule == offline.RuleStrictFields:
		return fmt.Sprintf("unknown field %q", p.Field)
	case p.Field == "":
		return p.Message
	}
	return p.Field + ": " + p.Message
}
