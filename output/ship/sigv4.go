// SPDX-License-Identifier: Apache-2.0

package ship

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"time"
)

// AWS Signature Version 4, as S3 and every S3-compatible store check it: only what a PUT
// and a HEAD of one object need (no query strings, no chunked upload). Written here rather
// than taken from an SDK: it is forty lines of a stable, published algorithm, which the
// tests run against a real server.

const (
	sigAlgorithm = "AWS4-HMAC-SHA256"
	amzDate      = "20060102T150405Z"
	amzDay       = "20060102"
	// unsignedPayload is the payload hash of a request without a body to hash.
	emptyPayload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// sign adds the date, payload hash and Authorization headers to req, whose body hashes to
// payloadHash (hex SHA-256). Every header req has is signed.
func sign(req *http.Request, creds Credentials, region string, payloadHash string, now time.Time) {
	now = now.UTC()
	req.Header.Set("X-Amz-Date", now.Format(amzDate))
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	names := []string{"host"}
	for name := range req.Header {
		names = append(names, strings.ToLower(name))
	}
	sort.Strings(names)
	var canonHeaders strings.Builder
	for _, name := range names {
		value := req.Host
		if name != "host" {
			value = strings.TrimSpace(req.Header.Get(name))
		}
		canonHeaders.WriteString(name + ":" + value + "\n")
	}
	signed := strings.Join(names, ";")
	canonical := strings.Join([]string{req.Method, req.URL.EscapedPath(), req.URL.RawQuery,
		canonHeaders.String(), signed, payloadHash}, "\n")
	scope := now.Format(amzDay) + "/" + region + "/s3/aws4_request"
	toSign := sigAlgorithm + "\n" + now.Format(amzDate) + "\n" + scope + "\n" + hexSHA256([]byte(canonical))
	key := hmacSHA256([]byte("AWS4"+creds.SecretKey), now.Format(amzDay))
	for _, part := range []string{region, "s3", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	req.Header.Set("Authorization", sigAlgorithm+" Credential="+creds.AccessKey+"/"+scope+
		", SignedHeaders="+signed+", Signature="+hex.EncodeToString(hmacSHA256(key, toSign)))
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// escapePath writes an object key as S3 wants it in a path: every byte but the unreserved
// ones and '/' percent-encoded.
func escapePath(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
	}
	return b.String()
}
