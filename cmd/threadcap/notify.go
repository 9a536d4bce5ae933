// SPDX-License-Identifier: Apache-2.0

package main

import (
	"net"
	"os"

	"github.com/sirupsen/logrus"
)

// notify tells systemd about a state change (sd_notify(3)) when it runs threadcap as a
// Type=notify service; elsewhere NOTIFY_SOCKET is unset and this does nothing. The
// protocol is one datagram on a unix socket, which the standard library speaks.
func notify(log *logrus.Entry, state string) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return
	}
	if path[0] == '@' {
		path = "\x00" + path[1:] // an abstract socket
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err == nil {
		_, err = conn.Write([]byte(state))
		conn.Close()
	}
	if err != nil {
		// systemd will time the start out and say so; this says why.
		log.WithError(err).Warn("cannot notify systemd")
	}
}
