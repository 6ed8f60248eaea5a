package browsertest_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/browsertest"
)

func TestSkipsWithoutABrowser(t *testing.T) {
	saved := browsertest.Paths
	t.Cleanup(func() { browsertest.Paths = saved })
	browsertest.Paths = []string{"/nonexistent/chromium"}
	t.Setenv(browsertest.PathEnv, "")
	t.Setenv(browsertest.RequireEnv, "")
	var sub *testing.T
	t.Run("absent", func(t *testing.T) {
		sub = t
		browsertest.New(t)
		t.Error("New returned without a browser")
	})
	assert.True(t, sub.Skipped())
}

func TestBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	tab := browsertest.Incognito(t, ctx)
	console := browsertest.Watch(t, tab)
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate("data:text/html,<title>x</title><script>console.error('boom')</script>")))
	title, err := chromedp.Run(tab, chromedp.Title())
	require.NoError(t, err)
	assert.Equal(t, "x", title)
	assert.Contains(t, console.Problems(), "console.error: \"boom\"")
}
