// h3-go PORT CERT KEY — an HTTP/3 server on quic-go (the Go module proxy), a second real peer
// for `h3://` tests: it answers as `serve http` does (`Hello World` for GET, its headers alone
// for HEAD, `OK` for a request with a body), prints `listening PORT` once it serves, and on
// SIGTERM `requests N`, the requests it answered. `h3-go PORT CERT KEY early` answers without
// reading the body: quic-go then stops it (STOP_SENDING), and frees the stream only once the
// client resets its half — the early answer of tests/hostile/h3.rs.
//
// h3-go load URL CONNS STREAMS SECONDS [RATE] — quic-go's HTTP/3 client as a load generator,
// the peer client of tools/vs-peers.sh's CPU study: CONNS QUIC connections (a Transport each,
// so each its own UDP socket, as wirebench's), STREAMS goroutines per connection each sending
// GETs back to back — or, with RATE, each on its share of RATE requests a second (a goroutine
// late on its schedule sends at once) — insecure (the built-in server's certificate is
// self-signed), for SECONDS; then it prints `requests N errors E seconds S`.
package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go/http3"
)

func main() {
	if (len(os.Args) == 6 || len(os.Args) == 7) && os.Args[1] == "load" {
		rate := "0"
		if len(os.Args) == 7 {
			rate = os.Args[6]
		}
		load(os.Args[2], os.Args[3], os.Args[4], os.Args[5], rate)
		return
	}
	if len(os.Args) != 4 && !(len(os.Args) == 5 && os.Args[4] == "early") {
		fmt.Fprintln(os.Stderr, "usage: h3-go PORT CERT KEY [early]")
		os.Exit(2)
	}
	early := len(os.Args) == 5
	var answered atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !early {
			_, _ = io.Copy(io.Discard, r.Body)
		}
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
	cert, err := tls.LoadX509KeyPair(os.Args[2], os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The socket is bound before `listening` is said (ListenAndServeTLS binds in its own
	// goroutine: a client told to go could find the port closed).
	conn, err := net.ListenPacket("udp", "127.0.0.1:"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tlsConfig := http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}})
	server := &http3.Server{Handler: handler, TLSConfig: tlsConfig}
	done := make(chan error, 1)
	go func() { done <- server.Serve(conn) }()
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

func load(url, conns, streams, seconds, rate string) {
	c, err1 := strconv.Atoi(conns)
	n, err2 := strconv.Atoi(streams)
	secs, err3 := strconv.ParseFloat(seconds, 64)
	perSec, err4 := strconv.ParseFloat(rate, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || c < 1 || n < 1 || secs <= 0 || perSec < 0 {
		fmt.Fprintln(os.Stderr, "usage: h3-go load URL CONNS STREAMS SECONDS [RATE]")
		os.Exit(2)
	}
	// Each goroutine's interval on a paced run (0: back to back), and its first offset.
	var interval time.Duration
	if perSec > 0 {
		interval = time.Duration(float64(c*n) / perSec * float64(time.Second))
	}
	var done, failed atomic.Int64
	start := time.Now()
	end := start.Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	for i := 0; i < c; i++ {
		tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		defer tr.Close()
		client := &http.Client{Transport: tr}
		for j := 0; j < n; j++ {
			wg.Add(1)
			due := start.Add(interval * time.Duration(i*n+j) / time.Duration(c*n))
			go func() {
				defer wg.Done()
				for {
					if interval > 0 {
						if !due.Before(end) {
							break
						}
						time.Sleep(time.Until(due))
						due = due.Add(interval)
					} else if !time.Now().Before(end) {
						break
					}
					resp, err := client.Get(url)
					if err != nil {
						failed.Add(1)
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						done.Add(1)
					} else {
						failed.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	fmt.Printf("requests %d errors %d seconds %.3f\n", done.Load(), failed.Load(), time.Since(start).Seconds())
}
