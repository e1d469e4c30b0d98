package main

import "testing"

// TestStatusFlags: what status refuses before it reads a cluster. Its
// reading and its output are package inspect's tests, through a real API
// server and, for the pods' answers, on the real node (test/node).
func TestStatusFlags(t *testing.T) {
	for _, tc := range []commandCase{
		{name: "no name", code: 2, stderr: []string{"name the APIGateway"}},
		{name: "two names", args: []string{"a", "b"}, code: 2, stderr: []string{`one APIGateway at a time, not also "b"`}},
		{name: "a bad -o after the name", args: []string{"shop", "-o", "yaml"}, code: 2, stderr: []string{`-o "yaml": want table or json`}},
		{name: "a cluster that cannot be read", args: []string{"shop", "-n", "team", "--kubeconfig", "does-not-exist"}, code: 2, stderr: []string{"loading the kubeconfig"}},
		{name: "help", args: []string{"--help"}, stdout: []string{"Usage: apigateway-operator status NAME"}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, "status") })
	}
}
