// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/configs/config"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/metrics"
	"github.com/threadcap/threadcap/output/ship"
	"github.com/threadcap/threadcap/sampler"
)

// listenMetrics opens the metrics socket when metrics.listen is set, before anything is
// written: an address in use or not this machine's is a mistake in the config (exit 2).
func listenMetrics(cfg *config.Config) (*metrics.Server, error) {
	if cfg.Metrics.Listen == "" {
		return nil, nil
	}
	srv, err := metrics.Listen(cfg.Metrics.Listen)
	if err != nil {
		return nil, config.UsageError{Err: fmt.Errorf("metrics.listen: %w: choose a free port, or stop what holds it", err)}
	}
	return srv, nil
}

// newMetrics makes this run's metrics, in a registry of its own with the Go runtime's and
// the process's, for srv to serve; without srv, none (the sampler then tells no one).
func newMetrics(srv *metrics.Server, cfg *config.Config, tracker *bpf.Tracker, writer *output.Writer, shipper *ship.Shipper) (sampler.Observer, *prometheus.Registry) {
	if srv == nil {
		return nil, nil
	}
	mc := metrics.Config{
		TopProcesses: cfg.Metrics.TopProcesses, Capacity: tracker.Capacity(),
		Writer: writer, Programs: tracker, StatsEnabled: bpf.StatsEnabled, Version: version(),
	}
	if shipper != nil {
		mc.Shipping = shipper // not a nil *Shipper in the interface
	}
	m := metrics.New(mc)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m, reg
}

// serveMetrics starts answering scrapes; without a server (no metrics.listen), nothing.
func serveMetrics(srv *metrics.Server, reg *prometheus.Registry) {
	if srv != nil {
		srv.Serve(reg, logrus.WithField(fieldComponent, "metrics"))
	}
}
