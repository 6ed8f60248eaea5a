// Package pageclient drives the approval page (package approval/page)
// over plain HTTP, as a person's browser would submit its forms: sign in
// with an approver token, then approve or deny a request. Tests of front
// ends and fleets use it where a real browser adds nothing; the page's
// own browser tests use Chromium.
package pageclient

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// Client is one signed-in approver's browser: a cookie jar on base, the
// page's absolute base URL (…/approvals).
type Client struct {
	base string
	hc   *http.Client
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// SignIn signs in to the page at base with an approver token. hc may be
// nil (a plain client); its jar is replaced.
func SignIn(hc *http.Client, base, token string) (*Client, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	if hc != nil {
		copied := *hc
		copied.Jar = jar
		c = &copied
	}
	cl := &Client{base: strings.TrimRight(base, "/"), hc: c}
	csrf, _, err := cl.form(cl.base + "/signin")
	if err != nil {
		return nil, err
	}
	body, status, err := cl.post("/signin/token", url.Values{"token": {token}, "csrf": {csrf}, "next": {"/"}})
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK || strings.Contains(body, `id="signin-title"`) {
		return nil, fmt.Errorf("pageclient: sign-in refused (%d)", status)
	}
	return cl, nil
}

// Decide approves or denies request id with note, as the request's page
// does. It returns the HTTP status of the answer and its body.
func (c *Client) Decide(id string, approve bool, note string) (int, string, error) {
	csrf, _, err := c.form(c.base + "/requests/" + id)
	if err != nil {
		return 0, "", err
	}
	decision := "deny"
	if approve {
		decision = "approve"
	}
	body, status, err := c.post("/requests/"+id, url.Values{"decision": {decision}, "note": {note}, "csrf": {csrf}})
	return status, body, err
}

// Get returns a page's status and body.
func (c *Client) Get(path string) (int, string, error) {
	resp, err := c.hc.Get(c.base + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, string(b), err
}

// form GETs a page and returns the CSRF token of its forms.
func (c *Client) form(u string) (string, string, error) {
	resp, err := c.hc.Get(u)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return "", "", err
	}
	m := csrfRE.FindSubmatch(b)
	if m == nil {
		return "", string(b), fmt.Errorf("pageclient: %s (%d) has no form", u, resp.StatusCode)
	}
	return string(m[1]), string(b), nil
}

func (c *Client) post(path string, form url.Values) (string, int, error) {
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return string(b), resp.StatusCode, err
}
