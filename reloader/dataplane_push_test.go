package reloader_test

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/push"
	"example.com/apigateway-operator/reloader"
)

// operatorKey signs the pushes; strangerKey stands for anyone else.
var (
	operatorKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	strangerKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))
)

const gatewayUID = "4c1d6f0e-8a2b-4e7c-9d3f-5b6a7c8d9e0f"

// withPushes is the operator's pod template as it is, with the flag
// naming the identity beside the mounted template; it fails the test
// when the template lacks it.
func withPushes(spec *corev1.PodSpec) {
	for _, a := range spec.Containers[0].Command {
		if strings.HasPrefix(a, "--push-identity=") {
			return
		}
	}
	panic("the operator's pod template has no --push-identity flag")
}

// withoutPushes is the pod template of an operator from before pushes:
// no --push-identity.
func withoutPushes(spec *corev1.PodSpec) {
	c := &spec.Containers[0]
	c.Command = slices.DeleteFunc(c.Command, func(a string) bool { return strings.HasPrefix(a, "--push-identity=") })
}

// volume is the ConfigMap data the operator writes for gw at serial: the
// template and the identity beside it; and the template's hash.
func volume(t *testing.T, gw *v1.APIGateway, serial uint64) (map[string]string, string) {
	t.Helper()
	_, data, hash := render(t, gw)
	id, err := json.Marshal(push.Identity{
		Namespace: gw.Namespace, Name: gw.Name, UID: gatewayUID,
		PublicKey: operatorKey.Public().(ed25519.PublicKey), Serial: serial,
	})
	require.NoError(t, err)
	data[push.IdentityKey] = string(id)
	return data, hash
}

// envelope is the push of gw's template at serial, signed with key.
func envelope(t *testing.T, key ed25519.PrivateKey, gw *v1.APIGateway, serial uint64) ([]byte, string) {
	t.Helper()
	_, data, hash := render(t, gw)
	env, err := push.Sign(key, push.Payload{
		Namespace: gw.Namespace, Name: gw.Name, UID: gatewayUID, Serial: serial,
		Template: []byte(data[firstKey(data)]),
	})
	require.NoError(t, err)
	return env, hash
}

// post sends a push to the pod's status port.
func (f *fixture) post(body []byte) (int, string) {
	f.t.Helper()
	resp, err := fresh.Post("http://127.0.0.1:8082"+reloader.PushPath, "application/octet-stream", bytes.NewReader(body))
	require.NoError(f.t, err, f.logs.String())
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return resp.StatusCode, string(got)
}

// reloads counts the configurations nginx has been reloaded with.
func (f *fixture) reloads() int {
	return strings.Count(f.logs.String(), "nginx serves the configuration")
}

// waitVolumeSerial waits until the reloader has read the volume at serial.
func (f *fixture) waitVolumeSerial(serial uint64) {
	f.t.Helper()
	line := fmt.Sprintf("volumeSerial=%d ", serial)
	require.Eventually(f.t, func() bool { return strings.Contains(f.logs.String(), line) }, wait, 10*time.Millisecond,
		"the reloader did not read serial %d:\n%s", serial, f.logs)
}

// TestPushGoesLive: a signed push is served as soon as its answer comes,
// with no volume change at all; forged, replayed and misdirected pushes
// change nothing; a push nginx refuses is reported as a refused volume
// change is; the volume, catching up later, reloads nothing, and a newer
// volume is loaded.
func TestPushGoesLive(t *testing.T) {
	b := startBackends(t)
	first := b.gatewayWith()
	f := startPod(t, b, first, withPushes)
	data, h1 := volume(t, first, 1)
	require.NoError(t, f.pod.Project(data))
	f.waitLoaded(h1)
	status, _ := f.get("/pushed/x")
	require.Equal(t, http.StatusNotFound, status)

	pushed := b.gatewayWith("/pushed")
	env, h5 := envelope(t, operatorKey, pushed, 5)
	reloads := f.reloads()
	sent := time.Now()
	code, body := f.post(env)
	require.Equal(t, http.StatusOK, code, body)
	t.Logf("the push was served %s after it was sent (nginx -t and the reload included)", time.Since(sent))
	var st reloader.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	assert.Equal(t, reloader.Status{Loaded: h5}, st, "the answer is the Status with the pushed hash")
	status, got := f.get("/pushed/x")
	assert.Equal(t, http.StatusOK, status, "the pushed route is not served once the push answered 200: %s", got)
	assert.Equal(t, reloader.Status{Loaded: h5}, f.status())
	assert.Equal(t, reloads+1, f.reloads())

	t.Run("a retry of the same push answers 200 and reloads nothing", func(t *testing.T) {
		code, body := f.post(env)
		assert.Equal(t, http.StatusOK, code, body)
		assert.Equal(t, reloads+1, f.reloads())
	})
	refusedWith := func(t *testing.T, want int, env []byte, why string) {
		t.Helper()
		code, body := f.post(env)
		assert.Equal(t, want, code, "%s: %s", why, body)
		assert.Equal(t, reloader.Status{Loaded: h5}, f.status(), why)
		status, _ := f.get("/pushed/x")
		assert.Equal(t, http.StatusOK, status, why)
		assert.Equal(t, reloads+1, f.reloads(), why)
	}
	t.Run("refused pushes change nothing", func(t *testing.T) {
		other, _ := envelope(t, operatorKey, b.gatewayWith("/other"), 5)
		refusedWith(t, http.StatusConflict, other, "the same serial with another template")
		older, _ := envelope(t, operatorKey, first, 1)
		refusedWith(t, http.StatusConflict, older, "a replay of an older serial")
		forged, _ := envelope(t, strangerKey, b.gatewayWith("/forged"), 6)
		refusedWith(t, http.StatusForbidden, forged, "signed with another key")
		elsewhere := b.gatewayWith("/elsewhere")
		elsewhere.Name = "another-gateway"
		replayed, _ := envelope(t, operatorKey, elsewhere, 6)
		refusedWith(t, http.StatusForbidden, replayed, "a push for another gateway of the same operator")
		refusedWith(t, http.StatusBadRequest, env[:len(env)-1], "a truncated envelope")
		refusedWith(t, http.StatusBadRequest, []byte("{}"), "not an envelope")
	})

	t.Run("a push nginx refuses", func(t *testing.T) {
		_, data, _ := render(t, b.gatewayWith("/refused"))
		bad := []byte(data[firstKey(data)] + "\nnewer_nginx_directive on;\n")
		env, err := push.Sign(operatorKey, push.Payload{Namespace: "team", Name: "dp", UID: gatewayUID, Serial: 6, Template: bad})
		require.NoError(t, err)
		code, body := f.post(env)
		assert.Equal(t, http.StatusUnprocessableEntity, code)
		assert.Contains(t, body, `unknown directive "newer_nginx_directive"`)
		st := f.status()
		assert.Equal(t, h5, st.Loaded)
		require.NotNil(t, st.Refused)
		assert.Equal(t, reloader.Refusal{Hash: reloader.Hash(bad), Reason: reloader.ReasonNginxTestFailed, Message: st.Refused.Message}, *st.Refused)
		assert.Contains(t, st.Refused.Message, `unknown directive "newer_nginx_directive"`)
		status, _ := f.get("/pushed/x")
		assert.Equal(t, http.StatusOK, status, "the previous configuration stopped serving")
	})

	t.Run("the volume lagging the push loads nothing", func(t *testing.T) {
		// A change the operator made before the push, delivered late.
		data, _ := volume(t, b.gatewayWith("/lagging"), 3)
		require.NoError(t, f.pod.Project(data))
		f.waitVolumeSerial(3)
		status, _ := f.get("/lagging/x")
		assert.Equal(t, http.StatusNotFound, status)
		status, _ = f.get("/pushed/x")
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, reloads+1, f.reloads())
	})
	t.Run("the volume catching up with the push reloads nothing", func(t *testing.T) {
		data, _ := volume(t, pushed, 5)
		require.NoError(t, f.pod.Project(data))
		f.waitVolumeSerial(5)
		assert.Equal(t, h5, f.status().Loaded)
		assert.Equal(t, reloads+1, f.reloads())
	})
	t.Run("a volume newer than the last push is loaded", func(t *testing.T) {
		data, h7 := volume(t, b.gatewayWith("/volume"), 7)
		require.NoError(t, f.pod.Project(data))
		f.waitLoaded(h7)
		status, _ := f.get("/volume/x")
		assert.Equal(t, http.StatusOK, status)
		status, _ = f.get("/pushed/x")
		assert.Equal(t, http.StatusNotFound, status)
		older, _ := envelope(t, operatorKey, pushed, 6)
		code, body := f.post(older)
		assert.Equal(t, http.StatusConflict, code, "a push older than the volume's serial: %s", body)
	})
}

// TestPushesOff: without the flag the pod takes no pushes (404), and
// with it but no identity in the volume (an operator from before
// pushes) it refuses them (403) and follows the volume as it always did.
func TestPushesOff(t *testing.T) {
	b := startBackends(t)
	env, _ := envelope(t, operatorKey, b.gatewayWith("/pushed"), 5)
	t.Run("no flag", func(t *testing.T) {
		f := startPod(t, b, b.gatewayWith(), withoutPushes)
		code, body := f.post(env)
		assert.Equal(t, http.StatusNotFound, code, body)
		require.NoError(t, f.pod.Stop(wait))
	})
	t.Run("no identity in the volume", func(t *testing.T) {
		f := startPod(t, b, b.gatewayWith(), withPushes)
		code, body := f.post(env)
		assert.Equal(t, http.StatusForbidden, code, body)
		_, data, hash := render(t, b.gatewayWith("/volume"))
		require.NoError(t, f.pod.Project(data))
		f.waitLoaded(hash)
	})
}

// TestPushBounds: a body over push.MaxEnvelope is answered 413 without
// being read to its end, whether its length is announced or not; while
// one push is being received a second waits in line, body unread, and a
// third is turned away at once (429).
func TestPushBounds(t *testing.T) {
	b := startBackends(t)
	gw := b.gatewayWith()
	f := startPod(t, b, gw, withPushes)
	data, _ := volume(t, gw, 1)
	require.NoError(t, f.pod.Project(data))
	env, hash := envelope(t, operatorKey, b.gatewayWith("/pushed"), 5)

	t.Run("an announced length over the bound", func(t *testing.T) {
		// 64 MiB announced, 2 MiB sent: the answer comes anyway.
		conn := dialPush(t, fmt.Sprintf("Content-Length: %d", 64<<20))
		go func() { _, _ = conn.Write(make([]byte, 2<<20)) }()
		assert.Equal(t, http.StatusRequestEntityTooLarge, readStatus(t, conn))
	})
	t.Run("a chunked body past the bound", func(t *testing.T) {
		// The body never ends: the answer comes once the bound is passed.
		conn := dialPush(t, "Transfer-Encoding: chunked")
		go func() {
			chunk := append(append([]byte(fmt.Sprintf("%x\r\n", 64<<10)), make([]byte, 64<<10)...), "\r\n"...)
			for range 2 * push.MaxEnvelope / (64 << 10) {
				if _, err := conn.Write(chunk); err != nil {
					return
				}
			}
		}()
		assert.Equal(t, http.StatusRequestEntityTooLarge, readStatus(t, conn))
	})
	t.Run("concurrent pushes", func(t *testing.T) {
		// Two pushes send their headers and hold their bodies back: one
		// takes the slot, the other the place in line, and a third is
		// turned away at once. Until both are there, the third may be
		// processed (a malformed push changes nothing), or take the
		// place in line and be turned away after pushQueueWait, one of
		// the two then answered at once: those are sent again.
		malformed := []byte("not an envelope")
		first, second := &heldPush{header: fmt.Sprintf("Content-Length: %d", len(env))},
			&heldPush{header: fmt.Sprintf("Content-Length: %d", len(malformed))}
		require.Eventually(t, func() bool {
			first.keep(t)
			second.keep(t)
			code, _ := f.post(malformed)
			return code == http.StatusTooManyRequests && !answered(first.conn) && !answered(second.conn)
		}, wait, 10*time.Millisecond, "a third push was not turned away while two were in hand")
		_, err := f.pod.Status(t.Context(), "reloader")
		assert.NoError(t, err, "the status is not served while pushes are in hand")
		for _, c := range []net.Conn{first.conn, second.conn} {
			require.NoError(t, c.SetDeadline(time.Now().Add(wait)))
		}
		_, err = first.conn.Write(env)
		require.NoError(t, err)
		_, err = second.conn.Write(malformed)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, readStatus(t, first.conn))
		assert.Equal(t, http.StatusBadRequest, readStatus(t, second.conn), "the push in line was not processed")
		assert.Equal(t, hash, f.status().Loaded)
		code, body := f.post(env)
		assert.Equal(t, http.StatusOK, code, "the slot was not given back: %s", body)
	})
}

// dialPush opens a connection to the push endpoint and sends the request
// line and headers, with header, and no body.
func dialPush(t *testing.T, header string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:8082", wait)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(wait)))
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: pod\r\n%s\r\n\r\n", reloader.PushPath, header)
	require.NoError(t, err)
	return conn
}

// heldPush is a push whose headers are sent and whose body is held back.
type heldPush struct {
	header string
	conn   net.Conn
	dialed time.Time
}

// keep dials the push again unless its connection still waits for its
// body: not answered (a push turned away) nor closed by the server, and
// younger than half the server's ReadTimeout, which runs from the
// request's start, so that the body sent once the loop ends arrives in
// time on a loaded machine. The connection replaced is closed, which
// gives back the slot or the place in line it held.
func (p *heldPush) keep(t *testing.T) {
	if p.conn != nil && time.Since(p.dialed) < reloader.ReadTimeout/2 && !answered(p.conn) {
		return
	}
	if p.conn != nil {
		_ = p.conn.Close()
	}
	p.conn, p.dialed = dialPush(t, p.header), time.Now()
}

// answered reports whether the server has answered on conn already (a
// push turned away, 429) or closed it, waiting a millisecond for it;
// conn is no use then.
func answered(conn net.Conn) bool {
	_ = conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	n, err := conn.Read(make([]byte, 1))
	var timeout net.Error
	return n > 0 || (err != nil && (!errors.As(err, &timeout) || !timeout.Timeout()))
}

// readStatus reads the answer's status code from conn.

func readStatus(t *testing.T, conn net.Conn) int {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}
