// Command echoserver is the node tests' backend image (and, run as
// `echoserver pause`, their pods' sandbox image): it answers every request
// on :$PORT (8080 when unset) with who answered and what it received, as
// JSON, and a WebSocket handshake with an echo of every message (package
// wsecho). Static, so that an image of it is
// this one file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"example.com/apigateway-operator/test/wsecho"
)

// Reply is what it answers: its Service ($SERVICE), its pod ($HOSTNAME),
// and the request as it reached it.
type Reply struct {
	Service    string `json:"service"`
	Pod        string `json:"pod"`
	RequestURI string `json:"requestURI"`
	Host       string `json:"host"`
}

// echo is the WebSocket echo of every WebSocket handshake.
var echo = wsecho.Handler()

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "pause" {
		// The sandbox's process: it holds the pod's namespaces until
		// the kubelet stops the pod.
		<-ctx.Done()
		return nil
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	srv := &http.Server{Addr: ":" + port, ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			echo.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		pod, _ := os.Hostname()
		_ = json.NewEncoder(w).Encode(Reply{Service: os.Getenv("SERVICE"), Pod: pod, RequestURI: r.RequestURI, Host: r.Host})
	})}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("serving on :%s", port)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
