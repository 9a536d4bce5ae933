// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/configs/config"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/sampler"
)

// daemon is what SIGHUP reconfigures.
type daemon struct {
	opts    *config.Options
	cfg     config.Config // what runs now
	sampler *sampler.Sampler
	writer  *output.Writer
	log     *logrus.Entry
}

// reloadOn reloads the config file at each signal, until ctx ends.
func (d *daemon) reloadOn(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			notify(d.log, fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", time.Now().UnixMicro()))
			d.reload()
			notify(d.log, "READY=1")
		}
	}
}

// reload applies the file as it is now, under the same flags. A file with mistakes
// changes nothing.
func (d *daemon) reload() {
	next, err := d.opts.Load()
	if err != nil {
		d.log.WithError(err).Error("config not reloaded: fix it and send SIGHUP again; running on with the previous one")
		return
	}
	changed, restart := config.Diff(&d.cfg, &next)
	if len(changed) == 0 && len(restart) == 0 {
		d.log.Info("config reloaded: nothing changed")
		return
	}
	// What needs a restart keeps its running value, so that it is reported until then.
	next.KeepRestartOnly(&d.cfg)

	setupLogging(&next)
	if err := d.sampler.Reconfigure(sampler.Update{Interval: next.Interval(), Filter: filterOf(&next)}); err != nil {
		d.log.WithError(err).Error("sampling settings not reloaded")
		return
	}
	o := next.Writer(nil)
	if err := d.writer.SetPolicy(output.Policy{Compress: o.Compress, MaxAge: o.MaxAge, MaxBytes: o.MaxBytes,
		MinFreeBytes: o.MinFreeBytes, FsyncEvery: o.FsyncEvery}); err != nil {
		d.log.WithError(err).Error("output settings not reloaded")
		return
	}
	d.cfg = next
	log := d.log
	if len(changed) > 0 {
		log = log.WithField(fieldChanged, changed)
	}
	log.Info("config reloaded")
	if len(restart) > 0 {
		d.log.WithField(fieldRestart, restart).Warn("these settings changed in the config but take effect only after a restart")
	}
}
