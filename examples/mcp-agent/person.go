package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gatehost/gatehost/internal/testing/browsertest"
)

// person is the demo's scripted approver: a headless Chromium that opens
// the approval page's link the agent's client was shown, signs in with an
// approver token, reads the request and approves or denies it, as a
// person at a browser would. The MCP client never answers for them.
type person struct {
	browser context.Context
	stop    func()
	token   string
	signed  bool
}

// personTimeout bounds one decision: the browser's start, sign-in and
// click, never a wait for something to happen by itself.
const personTimeout = 2 * time.Minute

func newPerson(tokenFile string) (*person, error) {
	path := browsertest.Find()
	if path == "" {
		return nil, fmt.Errorf("the approval step's person is a headless Chromium, and none was found: install Debian's chromium (apt-get install chromium) or set $%s", browsertest.PathEnv)
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("approver token: %w", err)
	}
	token, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	dir, err := os.MkdirTemp("", "gatehost-demo-browser-")
	if err != nil {
		return nil, err
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browsertest.AllocatorOptions(path, dir)...)
	ctx, cancelTab := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	return &person{browser: ctx, token: token, stop: func() { cancelTab(); cancelAlloc(); os.RemoveAll(dir) }}, nil
}

// decide opens url (a request's page), signs in the first time, and
// approves or denies the request with note.
func (p *person) decide(url, id string, approve bool, note string) error {
	ctx, cancel := context.WithTimeout(p.browser, personTimeout)
	defer cancel()
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	sel := "#" + id
	steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(url)}
	if !p.signed {
		steps = append(steps,
			chromedp.WaitVisible(css("#token")),
			chromedp.SendKeys(css("#token"), p.token),
			chromedp.Click(css("#signin-token")))
	}
	button, badge := sel+"-deny", sel+" .badge-denied"
	if approve {
		// Approved, or already approved and run: the call it waited for
		// may run before the page shows the decision.
		button, badge = sel+"-approve", sel+" .badge-approved, "+sel+" .badge-used"
	}
	steps = append(steps, chromedp.WaitVisible(css(button)))
	if err := chromedp.Do(ctx, steps...); err != nil {
		return fmt.Errorf("the approval page %s: %w", url, err)
	}
	tool, err := chromedp.Run(ctx, chromedp.Text(css(sel+" .tool")))
	if err != nil {
		return err
	}
	args, err := chromedp.Run(ctx, chromedp.Text(css(sel+" pre.json")))
	if err != nil {
		return err
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(css(sel+"-note"), note),
		chromedp.Click(css(button)),
		chromedp.WaitVisible(css(badge))); err != nil {
		return fmt.Errorf("the approval page %s: %w", url, err)
	}
	p.signed = true
	verb := "denies"
	if approve {
		verb = "approves"
	}
	fmt.Printf("  [person, in a browser] reads %s with its arguments %s\n  [person] %s it: %q\n", tool, compact(args), verb, note)
	return nil
}

func compact(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
