package frontend

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/gatehost/gatehost/config"
)

// ErrStopping: a reload was asked for after Stop.
var ErrStopping = errors.New("shutting down")

// Reloader reloads a front end's config — on SIGHUP (OnHUP calls
// Reload), when the file's content changes (Run polls it), or when asked —
// one reload at a time. Apply does the front end's part: build the config
// file's runtime beside the running one and swap it in. A reload that
// fails changes nothing: the running config keeps serving, and the
// failure is logged with its cause and counted
// (gatehost_config_reloads_total{result="failure"}).
type Reloader struct {
	// Path is the config file.
	Path string
	// Interval is how often Run polls Path for a change; 0 polls never.
	Interval time.Duration
	// Name prefixes the log lines ("gatehost serve").
	Name    string
	Logger  *slog.Logger
	Metrics *Metrics
	// Apply builds Path's runtime and swaps it in as generation gen; it
	// returns what the success log line adds, or an error having changed
	// nothing.
	Apply func(ctx context.Context, gen uint64) ([]any, error)

	mu      sync.Mutex
	gen     uint64
	digest  [32]byte
	stopped bool
}

// Started records that generation 1, the config read at start, serves;
// its content is what the first poll compares with. Call it once the
// first runtime serves.
func (r *Reloader) Started() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen = 1
	r.Metrics.generation(1, false)
}

// Mark records the content of the config file as the one read, so that Run
// does not reload it: call it when the front end reads the file itself at
// start.
func (r *Reloader) Mark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, err := config.ReadFile(r.Path); err == nil {
		r.digest = sha256.Sum256(b)
	}
}

// Generation is the serving config's: 1 at start, one more per successful
// reload; 0 before Started.
func (r *Reloader) Generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// Reload reloads now; trigger says why, in the log. A failed reload
// changes nothing and is returned.
func (r *Reloader) Reload(ctx context.Context, trigger string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloadLocked(ctx, trigger)
}

func (r *Reloader) reloadLocked(ctx context.Context, trigger string) error {
	if r.stopped {
		return ErrStopping
	}
	if r.gen == 0 {
		return errors.New("not ready: the first config is still loading")
	}
	start := time.Now()
	if b, err := config.ReadFile(r.Path); err == nil {
		r.digest = sha256.Sum256(b)
	}
	attrs, err := r.Apply(ctx, r.gen+1)
	if err != nil {
		r.Metrics.reloadFailed()
		r.Logger.Error(r.Name+": reload failed; the previous config keeps serving",
			"trigger", trigger, "config", r.Path, "config_generation", r.gen, "err", err)
		return err
	}
	r.gen++
	r.Metrics.generation(r.gen, true)
	r.Logger.Info(r.Name+": config reloaded", append(append([]any{"trigger", trigger, "config_generation", r.gen}, attrs...),
		"took", time.Since(start).Round(time.Millisecond))...)
	return nil
}

// IfChanged reloads when the config file's content differs from what the
// last reload read.
func (r *Reloader) IfChanged(ctx context.Context) {
	b, err := config.ReadFile(r.Path)
	if err != nil {
		return // a rename-in-progress; the next poll sees the new file
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if sha256.Sum256(b) != r.digest {
		_ = r.reloadLocked(ctx, "config file changed")
	}
}

// Stop waits for a reload in progress and refuses every later one.
func (r *Reloader) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
}

// Run reloads, every Interval, when the file changed, until ctx is done.
func (r *Reloader) Run(ctx context.Context) {
	if r.Interval <= 0 {
		return
	}
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.IfChanged(ctx)
		}
	}
}

// OnHUP calls reload on each SIGHUP the process gets, the operator's
// reload signal, until ctx is done or stop is called. A failed reload is
// reload's to log: the running config keeps serving.
func OnHUP(ctx context.Context, reload func(context.Context) error) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-hup:
				_ = reload(ctx)
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
	}
}
