// SPDX-License-Identifier: Apache-2.0

package ship

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// ErrCredentials is returned when the endpoint refuses the credentials: retrying does not
// help until they are fixed.
var ErrCredentials = errors.New("the endpoint refused the credentials")

// client puts and heads objects of one bucket.
type client struct {
	http   *http.Client
	base   string // scheme://host[:port]/bucket
	host   string
	region string
	creds  Credentials
	clock  func() time.Time
}

func newClient(cfg Config, creds Credentials) *client {
	scheme := "https"
	if !cfg.TLS {
		scheme = "http"
	}
	return &client{
		http:   &http.Client{Timeout: cfg.Timeout},
		base:   scheme + "://" + cfg.Endpoint + "/" + cfg.Bucket,
		host:   cfg.Endpoint,
		region: cfg.Region,
		creds:  creds,
		clock:  cfg.Clock,
	}
}

// digests are a file's checksums: MD5, which S3 checks the body against (Content-MD5) and
// returns as the ETag of a single PUT, and SHA-256, which the signature covers.
type digests struct {
	md5    []byte
	sha256 string
	size   int64
}

func digestFile(path string) (digests, error) {
	f, err := os.Open(path)
	if err != nil {
		return digests{}, err
	}
	defer f.Close()
	m, s := md5.New(), sha256.New()
	n, err := io.Copy(io.MultiWriter(m, s), f)
	if err != nil {
		return digests{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return digests{md5: m.Sum(nil), sha256: hex.EncodeToString(s.Sum(nil)), size: n}, nil
}

// etag is how S3 shows an object's MD5.
func (d digests) etag() string { return `"` + hex.EncodeToString(d.md5) + `"` }

// head says whether key exists, and its ETag.
func (c *client) head(ctx context.Context, key string) (etag string, exists bool, err error) {
	req, err := c.request(ctx, http.MethodHead, key, nil)
	if err != nil {
		return "", false, err
	}
	sign(req, c.creds, c.region, emptyPayload, c.clock())
	resp, err := c.http.Do(req)
	if err != nil {
		return "", false, err
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return resp.Header.Get("ETag"), true, nil
	case resp.StatusCode == http.StatusNotFound:
		return "", false, nil
	}
	return "", false, statusError(resp, nil)
}

// put uploads the file at path as key; the endpoint checks the body against both digests,
// and the ETag it returns is checked against the MD5.
func (c *client) put(ctx context.Context, key, path string, d digests) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	req, err := c.request(ctx, http.MethodPut, key, f)
	if err != nil {
		return err
	}
	req.ContentLength = d.size
	req.Header.Set("Content-Md5", base64.StdEncoding.EncodeToString(d.md5))
	req.Header.Set("Content-Type", "application/vnd.apache.parquet")
	sign(req, c.creds, c.region, d.sha256, c.clock())
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(resp, resp.Body)
	}
	if got := resp.Header.Get("ETag"); got != d.etag() {
		return fmt.Errorf("the endpoint stored %s with ETag %s, not the file's MD5 %s", key, got, d.etag())
	}
	return nil
}

func (c *client) request(ctx context.Context, method, key string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/"+escapePath(key), body)
	if err != nil {
		return nil, err
	}
	req.Host = c.host
	return req, nil
}

// s3Error is the body of an S3 error response.
type s3Error struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// statusError turns an error response into an error, ErrCredentials for a refusal of the
// keys or the signature.
func statusError(resp *http.Response, body io.Reader) error {
	var e s3Error
	if body != nil {
		b, _ := io.ReadAll(io.LimitReader(body, 64<<10))
		_ = xml.Unmarshal(b, &e) // a body that is no S3 error leaves the status alone
	}
	what := resp.Status
	if e.Code != "" {
		what += " " + e.Code
	}
	switch {
	case resp.StatusCode == http.StatusForbidden && (e.Code == "" || e.Code == "AccessDenied" ||
		e.Code == "InvalidAccessKeyId" || e.Code == "SignatureDoesNotMatch"):
		return fmt.Errorf("%w (%s): check ship.credentials_file or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "+
			"and that they may write to the bucket", ErrCredentials, what)
	case e.Code == "NoSuchBucket":
		return fmt.Errorf("%s: the bucket does not exist; create it or fix ship.bucket", what)
	}
	return fmt.Errorf("the endpoint answered %s %s", what, strings.TrimSpace(e.Message))
}
