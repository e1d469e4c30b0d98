// Package webhooks holds the mutating and validating admission webhooks for
// the v1 APIGateway (the hub), and wires them with the conversion webhook
// onto the manager's webhook server.
package webhooks
