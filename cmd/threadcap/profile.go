// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler"
)

// startProfile opens the CPU profile when hz is not 0 and writes its minutes to sink until
// ctx is done or stop is called. With spans (a tracker with span probes, named spanNames
// in id order), samples count by the innermost span their thread had open. stop writes the minute so far and closes the profile's
// kernel side; call it before the writer is closed. It may be called more than once: the
// first call returns the error.
func startProfile(ctx context.Context, hz int, spans *bpf.Tracker, spanNames []string, sink sampler.ProfileSink, log *logrus.Entry) (stop func() error, err error) {
	if hz == 0 {
		return func() error { return nil }, nil
	}
	prof, err := bpf.OpenProfile(hz, spans)
	if err != nil {
		return nil, err
	}
	p, err := sampler.NewProfiler(sampler.ProfileConfig{Source: prof, Sink: sink, SpanNames: spanNames, Wall: time.Now, Log: log})
	if err != nil {
		prof.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	log.WithField("hz", hz).Info("CPU profile started")
	var once sync.Once
	return func() (err error) {
		once.Do(func() {
			cancel()
			<-done
			lost, stacks := prof.LostSamples(), prof.LostStacks()
			err = prof.Close()
			if lost+stacks > 0 {
				log.WithFields(logrus.Fields{"lost_samples": lost, "lost_stacks": stacks}).Info("CPU profile stopped")
			}
		})
		return err
	}, nil
}
