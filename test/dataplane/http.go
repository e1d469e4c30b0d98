package dataplane

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// RawRequest sends requestLine (e.g. "GET /x HTTP/1.1", sent byte for
// byte, so the test controls the exact request target) with a Host header
// and the given header lines ("Name: value") to addr and returns the
// response's status and body.
func RawRequest(addr, requestLine, host string, headers ...string) (int, string, error) {
	conn, err := net.DialTimeout("tcp", addr, Wait)
	if err != nil {
		return 0, "", err
	}
	return exchange(conn, requestLine, host, headers)
}

// RawResponse is RawRequest from the local address from, returning the
// whole response (its body read): a test of headers such as Location,
// or of a peer the gateway trusts.
func RawResponse(from, addr, requestLine, host string, headers ...string) (*http.Response, string, error) {
	d := &net.Dialer{Timeout: Wait, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	return exchangeResponse(conn, requestLine, host, headers)
}

// exchange sends the request on conn, reads the response and closes conn.
func exchange(conn net.Conn, requestLine, host string, headers []string) (int, string, error) {
	resp, body, err := exchangeResponse(conn, requestLine, host, headers)
	if resp == nil {
		return 0, "", err
	}
	return resp.StatusCode, body, err
}

// exchangeResponse is exchange, returning the response.
func exchangeResponse(conn net.Conn, requestLine, host string, headers []string) (*http.Response, string, error) {
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(Wait)); err != nil {
		return nil, "", err
	}
	extra := ""
	for _, h := range headers {
		extra += h + "\r\n"
	}
	if _, err := fmt.Fprintf(conn, "%s\r\nHost: %s\r\n%sConnection: close\r\n\r\n", requestLine, host, extra); err != nil {
		return nil, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, string(body), err
}

// RawRequestTLS is RawRequest over TLS, with config's server name (SNI)
// and roots.
func RawRequestTLS(addr string, config *tls.Config, requestLine, host string, headers ...string) (int, string, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: Wait}, "tcp", addr, config)
	if err != nil {
		return 0, "", err
	}
	return exchange(conn, requestLine, host, headers)
}

// HeaderLines are h's fields as the header lines ("Name: value") that
// RawRequest and RawResponse send, one per value.
func HeaderLines(h http.Header) []string {
	var lines []string
	for k, vs := range h {
		for _, v := range vs {
			lines = append(lines, k+": "+v)
		}
	}
	return lines
}
