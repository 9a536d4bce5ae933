// SPDX-License-Identifier: Apache-2.0

// Package ship uploads closed Parquet hours to an S3-compatible bucket, each once, under
// the key its path in the Parquet tree gives, and keeps the ones not yet uploaded from
// retention until they are.
package ship

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// Config says where hours are shipped. Shipping is off when Endpoint is "".
type Config struct {
	Dir      string // the output directory, whose Parquet tree is shipped
	Endpoint string // host[:port] of the S3-compatible endpoint
	Bucket   string
	// Prefix goes before each file's path in the tree: PREFIX/parquet/kind=.../HOST.parquet.
	Prefix string
	Region string // us-east-1 when ""
	TLS    bool   // https; http only when false
	// Interval is how often the tree is looked at for hours to ship; a minute when 0.
	Interval time.Duration
	// MaxBackoff bounds the wait between tries while the endpoint fails; 5 minutes when 0.
	MaxBackoff time.Duration
	Timeout    time.Duration    // of one request; 5 minutes when 0
	Clock      func() time.Time // time.Now when nil
	Log        *logrus.Entry
}

func (c Config) withDefaults() Config {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Minute
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Minute
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger().WithField("component", "ship")
	}
	return c
}

// Credentials are an access key pair. Its String never shows the secret.
type Credentials struct {
	AccessKey, SecretKey string
}

func (c Credentials) String() string { return "access key " + c.AccessKey }

// Environment variables the credentials come from when no file is given: the names every
// S3 tool reads.
const (
	EnvAccessKey = "AWS_ACCESS_KEY_ID"
	EnvSecretKey = "AWS_SECRET_ACCESS_KEY"
)

// LoadCredentials reads the credentials from path, or from the environment when path is "".
// The file holds two lines, access_key_id: KEY and secret_access_key: SECRET, and must not be
// readable by others: a secret any user can read is no secret.
func LoadCredentials(path string) (Credentials, error) {
	if path == "" {
		c := Credentials{AccessKey: os.Getenv(EnvAccessKey), SecretKey: os.Getenv(EnvSecretKey)}
		if c.AccessKey == "" || c.SecretKey == "" {
			return c, fmt.Errorf("no credentials: set ship.credentials_file, or %s and %s in threadcap's environment", EnvAccessKey, EnvSecretKey)
		}
		return c, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Credentials{}, fmt.Errorf("reading the credentials: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Credentials{}, fmt.Errorf("reading the credentials: %w", err)
	}
	if fi.Mode().Perm()&0o004 != 0 {
		return Credentials{}, fmt.Errorf("credentials file %s is readable by every user (mode %#o): chmod o-rwx %s",
			path, uint32(fi.Mode().Perm()), path)
	}
	var c Credentials
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key, value, ok := strings.Cut(text, ":")
		value = strings.TrimSpace(value)
		switch strings.TrimSpace(key) {
		case "access_key_id":
			c.AccessKey = value
		case "secret_access_key":
			c.SecretKey = value
		default:
			// The line is not shown: it may be a secret.
			return Credentials{}, fmt.Errorf("%s:%d: not access_key_id: KEY or secret_access_key: SECRET", path, line)
		}
		if !ok {
			return Credentials{}, fmt.Errorf("%s:%d: not access_key_id: KEY or secret_access_key: SECRET", path, line)
		}
	}
	if err := sc.Err(); err != nil {
		return Credentials{}, fmt.Errorf("reading %s: %w", path, err)
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return c, errors.New("credentials file " + path + " needs both access_key_id and secret_access_key")
	}
	return c, nil
}
