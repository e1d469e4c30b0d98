package ports

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary play a child that listens on a port it is
// told, as etcd or the operator does.
func TestMain(m *testing.M) {
	if addr := os.Getenv("PORTS_TEST_LISTEN"); addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			os.Stdout.WriteString(err.Error())
			os.Exit(1)
		}
		_ = l.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAChildListensOnAReservedPort(t *testing.T) {
	p, err := Reserve()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Release()) })
	for range 2 { // and again once the first has stopped, as a restart does
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PORTS_TEST_LISTEN="+p.Addr())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
}

func TestTwoListenersStillCollide(t *testing.T) {
	port := For(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	defer l.Close()
	_, err = net.Listen("tcp", addr)
	require.ErrorContains(t, err, "address already in use", "a port still in use is reported as before")

	// And the listener answers: the reservation takes no connections.
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			_ = c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_ = c.Close()
	require.NoError(t, <-accepted)
}

// TestTheKernelNeverHandsOutAReservedPort is the race the reservation
// closes: listeners on port 0 and outgoing connections never get a reserved
// port. With 100 of the ~28,000 ephemeral ports reserved, 2,000 of each
// would meet about 7 of them if the kernel did not skip them.
func TestTheKernelNeverHandsOutAReservedPort(t *testing.T) {
	reserved := map[int]bool{}
	for range 100 {
		reserved[For(t)] = true
	}
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	for range 2000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lp := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		c, err := net.Dial("tcp", srv.Addr().String())
		require.NoError(t, err)
		cp := c.LocalAddr().(*net.TCPAddr).Port
		_ = c.Close()
		require.False(t, reserved[lp], "a listener on port 0 got reserved port %d", lp)
		require.False(t, reserved[cp], "an outgoing connection got reserved port %d", cp)
	}
}

func TestReleaseTwice(t *testing.T) {
	p, err := Reserve()
	require.NoError(t, err)
	require.NoError(t, p.Release())
	require.NoError(t, p.Release())
}
