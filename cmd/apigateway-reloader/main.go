// Command apigateway-reloader runs inside every gateway pod: an init
// container copies it from the operator's image (`install`), and the nginx
// container runs it as its first process (`run`), see package reloader.
// It is a binary of its own, beside the operator's in the same image,
// because every gateway pod copies it at each start: the reloader's
// packages make a quarter of the operator's size.
package main

import (
	"os"

	"example.com/apigateway-operator/reloader"
)

func main() { os.Exit(reloader.Main(os.Args[1:], os.Stdout, os.Stderr)) }
