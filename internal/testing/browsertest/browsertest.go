// Package browsertest launches a real headless Chromium for tests through
// chromedp. Without a browser the test is skipped, unless
// GATEHOST_REQUIRE_BROWSER is set (CI sets it), when it fails.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// RequireEnv is the environment variable that turns a missing browser
// into a failure.
const RequireEnv = "GATEHOST_REQUIRE_BROWSER"

// Paths are where Chromium is looked for, in order, after $GATEHOST_CHROMIUM.
var Paths = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}

// Find returns the browser's path, or "".
func Find() string {
	if p := os.Getenv("GATEHOST_CHROMIUM"); p != "" {
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
	if path == "" {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("no Chromium (looked for $GATEHOST_CHROMIUM and %v) and %s is set: install it (apt-get install chromium)", Paths, RequireEnv)
		}
		t.Skipf("no Chromium (looked for $GATEHOST_CHROMIUM and %v): browser test skipped; install chromium, or set %s to make this a failure", Paths, RequireEnv)
	}
	opts := []chromedp.ExecAllocatorOption{
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
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
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
