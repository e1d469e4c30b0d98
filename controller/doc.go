// Package controller reconciles APIGateways into their children: the
// ConfigMap with the rendered nginx configuration, the Deployment, the Service
// and the Ingress, and reports status.
package controller
