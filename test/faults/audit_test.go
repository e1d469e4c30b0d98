package faults

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// request is a request as the API server's audit log records it
// (auditPolicy: the replicas' requests, at stage ResponseComplete).
type request struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	// Received is when the request arrived; Completed when it was
	// answered (a write done or refused).
	Received  time.Time `json:"requestReceivedTimestamp"`
	Completed time.Time `json:"stageTimestamp"`
}

func (r request) String() string {
	obj := r.ObjectRef.Resource
	if r.ObjectRef.Subresource != "" {
		obj += "/" + r.ObjectRef.Subresource
	}
	return fmt.Sprintf("%s %s %s %s/%s -> %d at %s (%s)", r.User.Username, r.Verb, obj, r.ObjectRef.Namespace, r.ObjectRef.Name,
		r.ResponseStatus.Code, r.Completed.Format("15:04:05.000000"), r.RequestURI)
}

// isLeaseWrite is whether w writes the leader election's Lease.
func (r request) isLeaseWrite() bool {
	return r.ObjectRef.Resource == "leases" && slices.Contains(writeVerbs, r.Verb)
}

// lists is whether r reads a whole collection afresh: a list, or a watch
// that starts with every object (sendInitialEvents, client-go's streaming
// list). A watch that resumes from a resource version does not.
func (r request) lists() bool {
	return r.Verb == "list" || r.Verb == "watch" && strings.Contains(r.RequestURI, "sendInitialEvents=true")
}

// succeeded is whether the API server carried the request out.
func (r request) succeeded() bool { return r.ResponseStatus.Code >= 200 && r.ResponseStatus.Code < 300 }

// readRequests reads every completed request in the audit log at path.
func readRequests(t *testing.T, path string) []request {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var r request
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if r.Stage == "ResponseComplete" || r.Stage == "ResponseStarted" {
			out = append(out, r)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// by keeps the requests of user.
func by(requests []request, user string) []request {
	var out []request
	for _, r := range requests {
		if r.User.Username == user {
			out = append(out, r)
		}
	}
	return out
}

// tookOver is when user first wrote the Lease successfully after since:
// the moment it became leader, by the API server's clock.
func tookOver(requests []request, user string, since time.Time) (time.Time, bool) {
	for _, r := range by(requests, user) {
		if r.isLeaseWrite() && r.succeeded() && r.Completed.After(since) {
			return r.Completed, true
		}
	}
	return time.Time{}, false
}

// lastRenewal is when user last wrote the Lease successfully before
// before.
func lastRenewal(requests []request, user string, before time.Time) (time.Time, bool) {
	var last time.Time
	for _, r := range by(requests, user) {
		if r.isLeaseWrite() && r.succeeded() && r.Completed.Before(before) {
			last = r.Completed
		}
	}
	return last, !last.IsZero()
}

// after keeps the requests completed after t.
func after(requests []request, t time.Time) []request {
	var out []request
	for _, r := range requests {
		if r.Completed.After(t) {
			out = append(out, r)
		}
	}
	return out
}

// staleRenewal is whether r is a Lease write the API server refused for its
// resourceVersion. client-go's elector renews optimistically with the record
// it observed last, and times that record from when the answer arrived: a
// replica frozen between sending a renewal and reading its answer wakes
// believing it renewed just now, sends one more renewal with the old
// resourceVersion, and is refused. The Lease's optimistic concurrency is
// the fence there: the request changed nothing.
func (r request) staleRenewal() bool {
	return r.isLeaseWrite() && r.ResponseStatus.Code == http.StatusConflict
}

// effective drops stale renewals: what is left are the writes that could
// have changed something.
func effective(requests []request) []request {
	return slices.DeleteFunc(slices.Clone(requests), request.staleRenewal)
}

func describe(requests []request) string {
	var b strings.Builder
	for _, r := range requests {
		b.WriteString("\n  " + r.String())
	}
	return b.String()
}
