// Package browsertest launches a real headless Chromium for tests through
// chromedp. Without a browser the test is skipped, unless
// GATEHOST_REQUIRE_BROWSER is set (CI sets it), when it fails.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// RequireEnv is the environment variable that turns a missing browser
// into a failure.
const RequireEnv = "GATEHOST_REQUIRE_BROWSER"

// Paths are where Chromium is looked for, in order, after $GATEHOST_CHROMIUM.
var Paths = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}

// PathEnv names a browser binary to use instead of Paths.
const PathEnv = "GATEHOST_CHROMIUM"

// Find returns the browser's path, or "": $GATEHOST_CHROMIUM when set,
// else the first of Paths that exists.
func Find() string {
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	for _, p := range Paths {
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	return ""
}

// HangGuard bounds a whole browser test: never a wait, only what stops a
// hung browser from hanging the test binary.
const HangGuard = 3 * time.Minute

// New starts a fresh headless browser (its own profile in a temporary
// directory) and returns a chromedp context of one tab on it, bounded by
// HangGuard. The browser stops at the end of the test.
func New(t testing.TB) context.Context {
	t.Helper()
	path := Find()
	if env := os.Getenv(PathEnv); env != "" {
		if _, err := exec.LookPath(env); err != nil {
			t.Fatalf("$%s names %q: %v", PathEnv, env, err)
		}
	}
	if path == "" {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("no Chromium (looked for $%s and %v) and %s is set: install it (apt-get install chromium)", PathEnv, Paths, RequireEnv)
		}
		t.Skipf("no Chromium (looked for $%s and %v): browser test skipped; install chromium, or set %s to make this a failure", PathEnv, Paths, RequireEnv)
	}
	opts := AllocatorOptions(path, t.TempDir())
	guard, cancelGuard := context.WithTimeout(context.Background(), HangGuard)
	actx, cancelAlloc := chromedp.NewExecAllocator(guard, opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelGuard()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx
}

// AllocatorOptions are the flags a headless Chromium at path runs with,
// its profile in userDataDir (fresh and empty): no sandbox (it runs as
// root in CI), no GPU, and none of the background connections a closed
// network refuses. Also used by the demo's scripted person.
func AllocatorOptions(path, userDataDir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(userDataDir),
		chromedp.WindowSize(1280, 900),
	}
}

// Incognito returns a tab of browser (a context New returned) in a
// browser context of its own: its own cookies and storage, as another
// person's browser would have. It closes at the end of the test.
func Incognito(t testing.TB, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// Console collects what a tab reports as going wrong: uncaught
// exceptions, console.error and console.warn calls, and the browser's
// error and warning log entries (Content-Security-Policy violations, failed
// loads).
type Console struct {
	mu   sync.Mutex
	msgs []string
}

// Watch starts collecting ctx's tab's problems.
func Watch(t testing.TB, ctx context.Context) *Console {
	t.Helper()
	c := &Console{}
	add := func(s string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.msgs = append(c.msgs, s)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			add("exception: " + ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				add("console." + string(ev.Type) + ": " + strings.Join(parts, " "))
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				add(string(ev.Entry.Source) + " " + string(ev.Entry.Level) + ": " + ev.Entry.Text + " " + ev.Entry.URL)
			}
		}
	})
	if err != nil {
		t.Fatalf("watch the console: %v", err)
	}
	return c
}

// Problems returns what was collected so far.
func (c *Console) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs)
}
