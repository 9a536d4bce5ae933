// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
)

// Path is the only path the endpoint serves.
const Path = "/metrics"

// ErrListen is the reason Listen fails: the address is taken, or not this machine's.
var ErrListen = errors.New("cannot listen for metrics")

// Server is the endpoint: an HTTP server on its own socket.
type Server struct {
	ln     net.Listener
	http   *http.Server
	done   chan struct{}
	closed sync.Once
	err    error
}

// Listen opens the socket at addr (host:port) at once, so that a port in use is found
// before anything else starts; Serve starts answering on it.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w on %s: %w", ErrListen, addr, err)
	}
	return &Server{ln: ln, done: make(chan struct{})}, nil
}

// Addr is the address the server listens on, with the port the kernel chose for port 0.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers /metrics from reg until Close, logging to log.
func (s *Server) Serve(reg *prometheus.Registry, log *logrus.Entry) {
	mux := http.NewServeMux()
	mux.Handle(Path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            log,
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.WithField("address", s.ln.Addr().String()).Info("serving metrics on " + Path)
	go func() {
		defer close(s.done)
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Error("metrics endpoint stopped")
		}
	}()
}

// Close stops the server, waiting at most a second for scrapes in progress (a scrape takes
// milliseconds), so that once it returns nothing reads what the metrics describe. It may
// be called on nil, and again.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	s.closed.Do(func() {
		if s.http == nil {
			s.err = s.ln.Close()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			s.err = errors.Join(err, s.http.Close())
		}
		<-s.done
	})
	return s.err
}
