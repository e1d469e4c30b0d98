package inflight

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodedBound(t *testing.T) {
	tests := map[string]struct {
		json string
		want int // elements counted
	}{
		"a number":                        {json: `42`, want: 0},
		"an empty object":                 {json: `{}`, want: 1},
		"a list of empty objects":         {json: `[{},{},{}]`, want: 1 + 3 + 2},
		"members":                         {json: `{"a":1,"b":[1,2]}`, want: 1 + 1 + 1 + 1},
		"commas and brackets in a string": {json: `{"a":"{[,,,]}"}`, want: 1},
		"an escaped quote":                {json: `["a\",[", {}]`, want: 1 + 1 + 1},
		"an escaped backslash":            {json: `["a\\", {}]`, want: 1 + 1 + 1},
		"an unterminated string":          {json: `["abc,{`, want: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, int64(len(tc.json)+tc.want*BytesPerElement), DecodedBound([]byte(tc.json)))
		})
	}
}

// chargingServer serves, behind a budget of MinBytes, a handler that
// charges its request the bytes named by the charge query parameter, then
// refunds refund of them, and answers with what the budget holds then.
func chargingServer(t *testing.T, maxWait time.Duration) (*Budget, *httptest.Server) {
	t.Helper()
	budget, err := New(MinBytes)
	require.NoError(t, err)
	budget.maxWait = maxWait
	s := httptest.NewServer(budget.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var charge, refund int64
		charge, _ = strconv.ParseInt(r.URL.Query().Get("charge"), 10, 64)
		refund, _ = strconv.ParseInt(r.URL.Query().Get("refund"), 10, 64)
		if err := Charge(r.Context(), charge); err != nil {
			WriteError(w, err)
			return
		}
		Refund(r.Context(), refund)
		now, _ := budget.Holding()
		_, _ = io.WriteString(w, strconv.FormatInt(now, 10))
	}), 1, Open))
	t.Cleanup(s.Close)
	return budget, s
}

func get(t *testing.T, s *httptest.Server, query string) (int, string, string) {
	t.Helper()
	res, err := s.Client().Post(s.URL+"/?"+query, "text/plain", strings.NewReader(""))
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Retry-After"), string(body)
}

// TestCharge: a handler's charges add to its request's reservation, a
// refund takes from it, and all is given back when the request ends; a
// charge no request may hold is refused with 413, and one that does not
// fit now, after the wait, with 429 and Retry-After.
func TestCharge(t *testing.T) {
	budget, s := chargingServer(t, 50*time.Millisecond)

	code, _, body := get(t, s, "charge=1000&refund=400")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, strconv.Itoa(requestOverhead+600), body, "held while the handler runs")
	now, _ := budget.Holding()
	assert.Zero(t, now, "given back when the request ends")

	code, retry, body := get(t, s, "charge="+strconv.Itoa(MinBytes))
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
	assert.Empty(t, retry)
	assert.Contains(t, body, "more than the 6291456 bytes any request to this path of the webhook server may hold")

	// Another request holds all but the reserve and a little: a small
	// charge still fits, from the reserve; one that makes the request
	// large does not.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other := &hold{budget: budget, share: Open, deadline: time.Now()}
	require.NoError(t, other.grow(ctx, budget.largest(Open)-requestOverhead-100))
	code, _, body = get(t, s, "charge=1000")
	assert.Equal(t, http.StatusOK, code, body)
	code, retry, body = get(t, s, "charge="+strconv.FormatInt(budget.small, 10))
	assert.Equal(t, http.StatusTooManyRequests, code)
	assert.Equal(t, retryAfter, retry)
	assert.Contains(t, body, "retry later")
	other.releaseAll()
	now, _ = budget.Holding()
	assert.Zero(t, now)
}

// TestChargeOutsideARequest: a handler called without a budget (in tests,
// or directly) is charged nothing.
func TestChargeOutsideARequest(t *testing.T) {
	require.NoError(t, Charge(context.Background(), 1<<40))
	Refund(context.Background(), 1<<40)
}
