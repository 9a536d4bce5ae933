// SPDX-License-Identifier: Apache-2.0

package ship

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output/hourfile"
)

// JournalName is the file in the output directory that lists the keys shipped, one a line,
// so that a restart resumes with the hours not shipped yet and ships none twice.
const JournalName = ".threadcap-shipped"

// reminder is how often a failure that goes on is logged again, with the backlog.
const reminder = 10 * time.Minute

// Shipper uploads the Parquet hours of a directory.
type Shipper struct {
	cfg    Config
	client *client
	log    *logrus.Entry
	kick   chan struct{}

	mu      sync.Mutex
	shipped map[string]bool // keys, from the journal
	journal *os.File

	// Failure logging: the first failure, a changed one, and a reminder now and then.
	lastErr    string
	lastLogged time.Time
}

// New reads the journal of what was shipped (none when the directory is new) and prepares
// the client; Run ships.
func New(cfg Config, creds Credentials) (*Shipper, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" || cfg.Dir == "" {
		return nil, errors.New("shipping needs an endpoint, a bucket and the output directory")
	}
	cfg = cfg.withDefaults()
	s := &Shipper{cfg: cfg, client: newClient(cfg, creds), log: cfg.Log, kick: make(chan struct{}, 1), shipped: map[string]bool{}}
	if err := s.readJournal(filepath.Join(cfg.Dir, JournalName)); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Shipper) readJournal(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the shipping journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// A line cut by a crash is no key: its hour is looked up again, and found shipped.
		if key, ok := strings.CutSuffix(sc.Text(), hourfile.Parquet); ok {
			s.shipped[key+hourfile.Parquet] = true
		}
	}
	return sc.Err()
}

// Key is the object key of a Parquet hour file: the prefix, then its path in the tree.
func (s *Shipper) Key(f hourfile.File) string {
	return path.Join(s.cfg.Prefix, f.String())
}

// Held reports whether f is a Parquet hour not shipped yet, which retention must keep.
func (s *Shipper) Held(f hourfile.File) bool {
	if f.Suffix != hourfile.Parquet {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.shipped[s.Key(f)]
}

// Kick asks for a pass now, when an hour has closed; it never blocks.
func (s *Shipper) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run ships until ctx ends: a pass at start, at each Kick and every Interval; after a
// failure, again after a backoff that doubles up to MaxBackoff, keeping the backlog.
func (s *Shipper) Run(ctx context.Context) {
	var backoff time.Duration
	for {
		wait := s.cfg.Interval
		if err := s.pass(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, time.Second), s.cfg.MaxBackoff)
			wait = backoff
			s.failed(err)
		} else {
			backoff = 0
			s.recovered()
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-time.After(wait):
		}
	}
}

// Close ends the journal; call it after Run has returned.
func (s *Shipper) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return nil
	}
	return s.journal.Close()
}

// Backlog lists the Parquet hours not shipped yet, oldest first.
func (s *Shipper) Backlog() ([]hourfile.File, error) {
	files, err := hourfile.List(s.cfg.Dir)
	if err != nil {
		return nil, err
	}
	var backlog []hourfile.File
	for _, f := range files {
		if s.Held(f) {
			backlog = append(backlog, f)
		}
	}
	return backlog, nil
}

// pass ships the backlog, oldest first, and stops at the first failure.
func (s *Shipper) pass(ctx context.Context) error {
	backlog, err := s.Backlog()
	if err != nil {
		return fmt.Errorf("listing hour files: %w", err)
	}
	for _, f := range backlog {
		if err := s.shipFile(ctx, f); err != nil {
			return fmt.Errorf("shipping %s (%d hour files waiting): %w", f.String(), len(backlog), err)
		}
	}
	return nil
}

// shipFile uploads f unless the bucket has it already, byte for byte (a crash after its
// upload and before the journal's line), then notes it in the journal.
func (s *Shipper) shipFile(ctx context.Context, f hourfile.File) error {
	key := s.Key(f)
	d, err := digestFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // deleted since it was listed: the free-space floor, or an administrator
	}
	if err != nil {
		return err
	}
	etag, exists, err := s.client.head(ctx, key)
	if err != nil {
		return err
	}
	uploaded := false
	if !exists || etag != d.etag() {
		if err := s.client.put(ctx, key, f.Path, d); err != nil {
			return err
		}
		uploaded = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		j, err := os.OpenFile(filepath.Join(s.cfg.Dir, JournalName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("opening the shipping journal: %w", err)
		}
		s.journal = j
	}
	if _, err := s.journal.WriteString(key + "\n"); err != nil {
		return fmt.Errorf("writing the shipping journal: %w", err)
	}
	if err := s.journal.Sync(); err != nil {
		return fmt.Errorf("syncing the shipping journal: %w", err)
	}
	s.shipped[key] = true
	log := s.log.WithField("key", key).WithField("bytes", d.size)
	if uploaded {
		log.Info("shipped hour file")
	} else {
		log.Info("hour file was in the bucket already")
	}
	return nil
}

// failed logs a failure the first time, when it changes, and every reminder while it lasts.
func (s *Shipper) failed(err error) {
	now := s.cfg.Clock()
	if err.Error() == s.lastErr && now.Sub(s.lastLogged) < reminder {
		return
	}
	s.lastErr, s.lastLogged = err.Error(), now
	s.log.WithError(err).Warn("shipping failed; the hour files stay and are tried again with backoff")
}

func (s *Shipper) recovered() {
	if s.lastErr != "" {
		s.log.Info("shipping works again; the backlog is shipped")
		s.lastErr = ""
	}
}
