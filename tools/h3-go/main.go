// h3-go PORT CERT KEY — an HTTP/3 server on quic-go (the Go module proxy), a second real peer
// for `h3://` tests: it answers as `serve http` does (`Hello World` for GET, its headers alone
// for HEAD, `OK` for a request with a body), prints `listening PORT` once it serves, and on
// SIGTERM `requests N`, the requests it answered.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/quic-go/quic-go/http3"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: h3-go PORT CERT KEY")
		os.Exit(2)
	}
	var answered atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		body := "Hello World"
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			body = "OK"
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = io.WriteString(w, body)
		}
		answered.Add(1)
	})
	server := &http3.Server{Addr: "127.0.0.1:" + os.Args[1], Handler: handler}
	done := make(chan error, 1)
	go func() { done <- server.ListenAndServeTLS(os.Args[2], os.Args[3]) }()
	fmt.Printf("listening %s\n", os.Args[1])
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
	case err := <-done:
		fmt.Fprintln(os.Stderr, err)
	}
	_ = server.Close()
	fmt.Printf("requests %d\n", answered.Load())
}
