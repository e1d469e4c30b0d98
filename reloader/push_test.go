package reloader

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestServedOrder(t *testing.T) {
	s := served{uid: "u1", serial: 5}
	for name, tc := range map[string]struct {
		served served
		o      offer
		want   int
	}{
		"older":                                 {served: s, o: offer{uid: "u1", serial: 4}, want: -1},
		"the same serial":                       {served: s, o: offer{uid: "u1", serial: 5}, want: 0},
		"newer":                                 {served: s, o: offer{uid: "u1", serial: 6}, want: 1},
		"no identity: judged by its hash":       {served: s, o: offer{}, want: 1},
		"another UID, a lower serial":           {served: s, o: offer{uid: "u2", serial: 1}, want: 1},
		"served from a volume with no identity": {o: offer{uid: "u1", serial: 1}, want: 1},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.served.order(tc.o))
		})
	}
}

func TestPushOutcome(t *testing.T) {
	refused := func(reason string) Status {
		return Status{Loaded: "old", Refused: &Refusal{Hash: "new", Reason: reason, Message: "nginx said"}}
	}
	for name, tc := range map[string]struct {
		st       Status
		stopping bool
		code     int
	}{
		"loaded":                         {st: Status{Loaded: "new"}, code: http.StatusOK},
		"refused by nginx -t":            {st: refused(ReasonNginxTestFailed), code: http.StatusUnprocessableEntity},
		"a reload that did not take":     {st: refused(ReasonReloadFailed), code: http.StatusInternalServerError},
		"the files could not be written": {st: refused(ReasonUnreadable), code: http.StatusInternalServerError},
		"stopped half way":               {st: Status{Loaded: "old"}, stopping: true, code: http.StatusServiceUnavailable},
		"a refusal of another":           {st: Status{Loaded: "old", Refused: &Refusal{Hash: "other"}}, code: http.StatusInternalServerError},
	} {
		t.Run(name, func(t *testing.T) {
			code, msg := pushOutcome(tc.st, "new", tc.stopping)
			assert.Equal(t, tc.code, code)
			if code == http.StatusUnprocessableEntity {
				assert.Equal(t, "nginx said", msg)
			}
		})
	}
}
