// Package basicauth checks the htpasswd files that routes' basicAuth
// name (issue 35) and says where a gateway pod finds each one.
//
// A tenant's Secret is never handed to nginx as it is: Check keeps only
// lines whose hash nginx verifies and that are not plaintext, and refuses
// the whole file when any line is anything else, so a typo can never turn
// into a user without a password. The file's name in the pod comes from
// the operator (File), never from the tenant's Secret, so no key of it can
// become a path.
package basicauth
