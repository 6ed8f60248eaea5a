package page_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/internal/testing/browsertest"
)

// screenshotEnv makes TestBrowser write docs/images/approval-page.png.
const screenshotEnv = "GATEHOST_WRITE_SCREENSHOT"

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// browserSignIn signs in through the test provider, the user typing name
// on its login page, starting at path of the page.
func (f *fixture) browserSignIn(t *testing.T, ctx context.Context, path, name string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+path),
		chromedp.WaitVisible(css("#signin-oidc")),
		chromedp.Click(css("#signin-oidc")),
		chromedp.WaitVisible(css("#username")),
		chromedp.SendKeys(css("#username"), name),
		chromedp.Click(css("#signin")),
		chromedp.WaitVisible(css("nav .me")),
	))
	assert.Equal(t, "oidc:"+f.idp.URL+"/"+name, textOf(t, ctx, "nav .me strong"))
}

// textOf waits for sel to show and returns its text.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css(sel))))
	s, err := chromedp.Run(ctx, chromedp.Text(css(sel)))
	require.NoError(t, err)
	return s
}

func indented(t *testing.T, raw string) string {
	var b bytes.Buffer
	require.NoError(t, json.Indent(&b, []byte(raw), "", "  "))
	return b.String()
}

// centre is where the middle of the element with id is in the viewport.
func centre(t *testing.T, ctx context.Context, id string) (x, y float64) {
	t.Helper()
	xy, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(`(function () {
		var r = document.getElementById(%q).getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2];
	})()`, id)))
	require.NoError(t, err)
	require.Len(t, xy, 2)
	return xy[0], xy[1]
}

// eval runs js in the page and returns its value.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	require.NoError(t, err)
	return v
}

// setSettle sets how long page.js holds back a click on a button a live
// update moved, in milliseconds: long, so that a click made at once is
// surely inside it however slow the machine, or 0 for the time after it.
func setSettle(t *testing.T, ctx context.Context, ms int) {
	t.Helper()
	eval[any](t, ctx, fmt.Sprintf(`document.getElementById('requests').setAttribute('data-settle', '%d')`, ms))
}

func TestBrowser(t *testing.T) {
	browser := browsertest.New(t)
	f := newFixture(t, setup{oidc: true, realClock: true})
	bob := &abi.Principal{Method: abi.MethodOIDC, Issuer: f.idp.URL, Subject: "bob"}

	t.Run("an approver signs in, sees the whole call and approves it", func(t *testing.T) {
		ctx := browsertest.Incognito(t, browser)
		console := browsertest.Watch(t, ctx)
		defer func() { assert.Empty(t, console.Problems(), "the console") }()
		rq := f.open(t, bob, "edit_file", editCall)
		f.browserSignIn(t, ctx, prefix+"/", "alice")
		sel := "#" + rq.ID
		assert.Equal(t, indented(t, editCall), strings.TrimSpace(textOf(t, ctx, sel+" pre.json")), "every argument, exactly")
		diff := textOf(t, ctx, sel+" pre.diff")
		assert.Contains(t, diff, "replicas: 6")
		assert.Contains(t, diff, "replicas: 2")
		assert.Equal(t, "oidc:"+f.idp.URL+"/bob", textOf(t, ctx, sel+" .caller"))

		require.NoError(t, chromedp.Do(ctx,
			chromedp.SendKeys(css(sel+"-note"), "rollout agreed in #ops"),
			chromedp.Click(css(sel+"-approve")),
			chromedp.WaitVisible(css(sel+" .badge-approved")),
		))
		got := f.get(t, rq.ID)
		assert.Equal(t, approval.StateApproved, got.State)
		assert.Equal(t, "rollout agreed in #ops", got.Note)
		assert.Equal(t, "alice", got.DecidedBy.Subject)
		assert.True(t, approval.ValidID(got.ApprovalID))
	})

	t.Run("an approver denies with a reason on the request's own page", func(t *testing.T) {
		ctx := browsertest.Incognito(t, browser)
		console := browsertest.Watch(t, ctx)
		defer func() { assert.Empty(t, console.Problems(), "the console") }()
		rq := f.open(t, bob, "write_file", `{"path":"/etc/hosts","content":"127.0.0.1 registry.example.com\n"}`)
		f.browserSignIn(t, ctx, prefix+"/requests/"+rq.ID, "alice")
		sel := "#" + rq.ID
		require.NoError(t, chromedp.Do(ctx,
			chromedp.WaitVisible(css(sel+"-deny")),
			chromedp.SendKeys(css(sel+"-note"), "not on production hosts"),
			chromedp.Click(css(sel+"-deny")),
			chromedp.WaitVisible(css(sel+" .badge-denied")),
		))
		assert.Equal(t, "not on production hosts", textOf(t, ctx, sel+" .note"))
		got := f.get(t, rq.ID)
		assert.Equal(t, approval.StateDenied, got.State)
		assert.Equal(t, "not on production hosts", got.Note)
	})

	t.Run("the caller cannot approve their own call", func(t *testing.T) {
		ctx := browsertest.Incognito(t, browser)
		rq := f.open(t, bob, "move_file", `{"source":"/srv/app/a","destination":"/srv/app/b"}`)
		f.browserSignIn(t, ctx, prefix+"/requests/"+rq.ID, "bob")
		sel := "#" + rq.ID
		assert.Equal(t, "You made this call; another approver must decide it.", textOf(t, ctx, sel+" .self"))
		noButton, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.getElementById(%q) === null`, rq.ID+"-approve")))
		require.NoError(t, err)
		assert.True(t, noButton)
		// Even a form the caller builds by hand in the page is refused.
		_, err = chromedp.Run(ctx, chromedp.Evaluate[any](fmt.Sprintf(`(function () {
				var f = document.createElement('form'); f.method = 'post'; f.action = %q;
				var add = function (n, v) { var i = document.createElement('input'); i.type = 'hidden'; i.name = n; i.value = v; f.appendChild(i); };
				add('csrf', document.querySelector('input[name=csrf]').value); add('decision', 'approve');
				document.body.appendChild(f); f.submit(); return null;
			})()`, prefix+"/requests/"+rq.ID)))
		require.NoError(t, err)
		assert.Equal(t, "You made this call; another approver must decide it.", textOf(t, ctx, "#error-detail"))
		assert.Equal(t, approval.StatePending, f.get(t, rq.ID).State)
	})

	t.Run("a forged cross-site POST is refused", func(t *testing.T) {
		ctx := browsertest.Incognito(t, browser)
		rq := f.open(t, bob, "delete_file", `{"path":"/srv/app/data.db"}`)
		f.browserSignIn(t, ctx, prefix+"/", "alice")
		// Another site (localhost is not 127.0.0.1's site) with a form
		// aimed at the page, as an attacker would host it.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><html lang="en"><body><form method="post" action="%s">
<input type="hidden" name="csrf" value="%s"><input type="hidden" name="decision" value="approve">
<button type="submit" id="go">Win a prize</button></form></body></html>`,
				f.srv.URL+prefix+"/requests/"+rq.ID, strings.Repeat("0", 64))
		}))
		defer evil.Close()
		u, err := url.Parse(evil.URL)
		require.NoError(t, err)
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate("http://localhost:"+u.Port()+"/"),
			chromedp.WaitVisible(css("#go")),
			chromedp.Click(css("#go")),
		))
		assert.Equal(t, "Refused", textOf(t, ctx, "#error-title"))
		assert.Equal(t, approval.StatePending, f.get(t, rq.ID).State)
	})

	t.Run("the list updates itself when a call arrives", func(t *testing.T) {
		ctx := browsertest.Incognito(t, browser)
		console := browsertest.Watch(t, ctx)
		defer func() { assert.Empty(t, console.Problems(), "the console") }()
		f.browserSignIn(t, ctx, prefix+"/", "alice")
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css("#requests"))))
		rq := f.open(t, bob, "create_directory", `{"path":"/srv/app/cache"}`)
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css("#"+rq.ID+"-approve"))))
		assert.Contains(t, textOf(t, ctx, "#live"), "Updated")
	})

	t.Run("every byte of a long value is in sight, escapes decoded beside them", func(t *testing.T) {
		ctx := browsertest.Incognito(t, browser)
		console := browsertest.Watch(t, ctx)
		defer func() { assert.Empty(t, console.Problems(), "the console") }()
		args := `{"repo":"w` + strings.Repeat(" ", 300) + `; rm -rf /","x":"` + strings.Repeat("A", 400) + `","cmd":"\u0065\u0076\u0069\u006c"}`
		rq := f.open(t, bob, "git_clone", args)
		f.browserSignIn(t, ctx, prefix+"/requests/"+rq.ID, "alice")
		sel := "#" + rq.ID + " pre.json"
		assert.Equal(t, indented(t, args), strings.TrimSpace(textOf(t, ctx, sel)), "every argument, exactly")
		assert.True(t, eval[bool](t, ctx, fmt.Sprintf(`(function () {
			var pre = document.querySelector(%q);
			return pre.scrollWidth <= pre.clientWidth;
		})()`, sel)), "nothing is scrolled out of sight sideways")
		assert.Equal(t, "300 spaces and tabs", eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).title`, sel+" mark.blank")))
		assert.Equal(t, `" → evil"`, eval[string](t, ctx, fmt.Sprintf(`getComputedStyle(document.querySelector(%q), '::after').content`, sel+" mark.uesc")))
	})

	t.Run("a request that arrives leaves the one aimed at under the pointer", func(t *testing.T) {
		g := newFixture(t, setup{oidc: true, realClock: true})
		bob := &abi.Principal{Method: abi.MethodOIDC, Issuer: g.idp.URL, Subject: "bob"}
		ctx := browsertest.Incognito(t, browser)
		console := browsertest.Watch(t, ctx)
		defer func() { assert.Empty(t, console.Problems(), "the console") }()
		aimed := g.open(t, bob, "write_file", `{"path":"/srv/app/notes.txt","content":"hello"}`)
		g.browserSignIn(t, ctx, prefix+"/", "alice")
		require.NoError(t, chromedp.Do(ctx, chromedp.ScrollIntoView(css("#"+aimed.ID+"-approve"))))
		x, y := centre(t, ctx, aimed.ID+"-approve")
		require.NoError(t, chromedp.Do(ctx, chromedp.MouseEvent(chromedp.MouseMoved, x, y)))
		node := fmt.Sprintf(`document.getElementById(%q)`, aimed.ID)
		eval[any](t, ctx, node+`.dataset.seen = 'before'`)

		arrived := g.open(t, bob, "delete_file", `{"path":"/srv/app/data.db"}`)
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css("#"+arrived.ID+"-approve"))))
		assert.Equal(t, "before", eval[string](t, ctx, node+`.dataset.seen || ''`), "the request's own node, kept")
		assert.Equal(t, aimed.ID+"-approve", eval[string](t, ctx, fmt.Sprintf(`document.elementFromPoint(%f, %f).id`, x, y)),
			"what is under the pointer after the update")
		require.NoError(t, chromedp.Do(ctx,
			chromedp.MouseClickXY(x, y),
			chromedp.WaitVisible(css(".badge-approved")),
		))
		assert.Equal(t, approval.StateApproved, g.get(t, aimed.ID).State)
		assert.Equal(t, approval.StatePending, g.get(t, arrived.ID).State, "the request that arrived is not decided")
	})

	t.Run("a click on a button a live update just moved is held back", func(t *testing.T) {
		for _, c := range []struct {
			name string
			// change changes the list under the page, which shows top
			// above below, and returns the request whose Approve button
			// it added or moved.
			change func(t *testing.T, g *fixture, caller *abi.Principal, top, below approval.Request) approval.Request
		}{
			{"a request arrives above the others", func(t *testing.T, g *fixture, caller *abi.Principal, _, _ approval.Request) approval.Request {
				return g.open(t, caller, "delete_file", `{"path":"/srv/app/data.db"}`)
			}},
			{"the request above is decided elsewhere and the next slides up", func(t *testing.T, g *fixture, _ *abi.Principal, top, below approval.Request) approval.Request {
				_, err := g.desk.Decide(t.Context(), top.ID, tokens["tok-bob"], false, "")
				require.NoError(t, err)
				return below
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				g := newFixture(t, setup{oidc: true, realClock: true})
				bob := &abi.Principal{Method: abi.MethodOIDC, Issuer: g.idp.URL, Subject: "bob"}
				below := g.open(t, bob, "write_file", `{"path":"/srv/app/a.txt","content":"a"}`)
				top := g.open(t, bob, "write_file", `{"path":"/srv/app/b.txt","content":"b"}`)
				ctx := browsertest.Incognito(t, browser)
				console := browsertest.Watch(t, ctx)
				defer func() { assert.Empty(t, console.Problems(), "the console") }()
				g.browserSignIn(t, ctx, prefix+"/", "alice")
				require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css("#"+top.ID+"-approve"))))
				version := `document.getElementById('requests').getAttribute('data-version')`
				before := eval[string](t, ctx, version)
				setSettle(t, ctx, 600_000)

				moved := c.change(t, g, bob, top, below)
				require.True(t, waitFor(ctx, func() bool { return eval[string](t, ctx, version) != before }), "the live update")
				sel := "#" + moved.ID
				notice := sel + " .settle-notice"
				require.NoError(t, chromedp.Do(ctx, chromedp.Click(css(sel+"-approve"))))
				require.True(t, waitFor(ctx, func() bool {
					if g.get(t, moved.ID).State != approval.StatePending {
						return true
					}
					shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, notice)))
					return err == nil && shown
				}))
				require.Equal(t, approval.StatePending, g.get(t, moved.ID).State, "a click at once decides nothing")
				assert.Equal(t, "The list just changed; check the request and click again.", textOf(t, ctx, notice))

				setSettle(t, ctx, 0) // the settle time has passed
				require.NoError(t, chromedp.Do(ctx,
					chromedp.Click(css(sel+"-approve")),
					chromedp.WaitVisible(css(sel+" .badge-approved")),
				))
				assert.Equal(t, approval.StateApproved, g.get(t, moved.ID).State, "a click after it decides")
			})
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		if os.Getenv(screenshotEnv) == "" {
			t.Skipf("set %s=1 to write docs/images/approval-page.png", screenshotEnv)
		}
		g := newFixture(t, setup{oidc: true, realClock: true})
		bob := &abi.Principal{Method: abi.MethodOIDC, Issuer: g.idp.URL, Subject: "bob"}
		rq := g.open(t, bob, "edit_file", editCall)
		ctx := browsertest.Incognito(t, browser)
		g.browserSignIn(t, ctx, prefix+"/", "alice")
		require.NoError(t, chromedp.Do(ctx,
			chromedp.EmulateViewport(1100, 900),
			chromedp.WaitVisible(css("#"+rq.ID+"-approve")),
			chromedp.SendKeys(css("#"+rq.ID+"-note"), "rollout agreed in #ops"),
		))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		out := filepath.Join("..", "..", "docs", "images", "approval-page.png")
		require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
		require.NoError(t, os.WriteFile(out, png, 0o644))
		t.Logf("wrote %s (%d bytes)", out, len(png))
	})
}
