package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/approval/notify"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

var (
	t0     = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	secret = []byte("0123456789abcdef0123456789abcdef")
)

// request is a pending request created at t0, open for ttl.
func request(ttl time.Duration) approval.Request {
	idx := 0
	return approval.Request{
		ID: "rq-0123456789abcdef0123456789abcdef",
		Binding: approval.Binding{Pipeline: "mcp", Session: "s-1", Tool: "refund_order",
			SchemaDigest: strings.Repeat("a", 64), SubjectSHA256: strings.Repeat("b", 64)},
		Upstream:  "payments",
		Effect:    "write",
		Caller:    &abi.Principal{Issuer: "https://id.example", Subject: "agent-7", Method: abi.MethodOIDC},
		Findings:  []abi.Finding{{Code: "confirmation_required", Severity: abi.Blocking, Message: "refunds need a person", ActionIndex: &idx}},
		Arguments: json.RawMessage(`{"order_id":"o-42","amount_cents":12500,"card_token":"tok_SECRET"}`),
		CreatedAt: t0, ExpiresAt: t0.Add(ttl), State: approval.StatePending,
	}
}

// clock is a fake clock: Sleep records the wait and advances Now.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// records collects Options.Record's records.
type records struct {
	mu   sync.Mutex
	list []record
}

type record struct {
	Kind    string
	Outcome notify.Outcome
}

func (r *records) Record(kind string, data any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, record{kind, data.(notify.Outcome)})
	return nil
}

func (r *records) All() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record(nil), r.list...)
}

// logBuffer is the text of a logger's lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// reply is one answer of a receiver.
type reply struct {
	status int
	header map[string]string
}

// delivery is one request a receiver got.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is a real HTTP receiver answering with its replies in turn
// (the last one again when they run out).
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	replies []reply
	got     []delivery
	check   func(http.Header, []byte) int // optional: overrides the status
}

func newReceiver(t *testing.T, replies ...reply) *receiver {
	t.Helper()
	rc := &receiver{replies: replies}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, delivery{r.Header.Clone(), body})
		rp := reply{status: http.StatusOK}
		if len(rc.replies) > 0 {
			rp = rc.replies[min(n, len(rc.replies)-1)]
		}
		check := rc.check
		rc.mu.Unlock()
		for k, v := range rp.header {
			w.Header().Set(k, v)
		}
		if check != nil {
			rp.status = check(r.Header, body)
		}
		w.WriteHeader(rp.status)
		_, _ = w.Write(bytes.Repeat([]byte("x"), 64<<10)) // read at most a few KB of it
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) Got() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// env is a notifier's fakes.
type env struct {
	clock   *clock
	records *records
	log     *logBuffer
}

func newEnv() *env {
	return &env{clock: &clock{now: t0}, records: &records{}, log: &logBuffer{}}
}

func (e *env) options() notify.Options {
	return notify.Options{
		URL:    func(id string) string { return "https://gate.example/approvals/requests/" + id },
		Logger: slog.New(slog.NewTextHandler(e.log, nil)),
		Now:    e.clock.Now,
		Sleep:  e.clock.Sleep,
		Record: e.records.Record,
	}
}

func (e *env) notifier(t *testing.T, hooks ...notify.Webhook) *notify.Notifier {
	t.Helper()
	n, err := notify.New(hooks, e.options())
	require.NoError(t, err)
	t.Cleanup(n.Close)
	return n
}

func jsonHook(url string) notify.Webhook {
	return notify.Webhook{Name: "ops", URL: url, Format: notify.FormatJSON, Secret: secret}
}

func TestDelivery(t *testing.T) {
	retryAt := t0.Add(30 * time.Second).Format(http.TimeFormat)
	tests := []struct {
		name         string
		replies      []reply
		retries      int
		wantAttempts int
		wantKind     string
		wantStatus   int
		wantSleeps   []time.Duration // nil: only their number (wantAttempts-1) is checked
		wantErr      string
	}{
		{name: "200", replies: []reply{{status: 200}}, wantAttempts: 1, wantKind: notify.KindNotified, wantStatus: 200},
		{name: "204", replies: []reply{{status: 204}}, wantAttempts: 1, wantKind: notify.KindNotified, wantStatus: 204},
		{name: "500 then 200", replies: []reply{{status: 500}, {status: 200}}, wantAttempts: 2, wantKind: notify.KindNotified, wantStatus: 200},
		{name: "always 500", replies: []reply{{status: 500}}, wantAttempts: 4, wantKind: notify.KindNotifyFailed, wantStatus: 500, wantErr: "HTTP 500"},
		{name: "always 502, one retry", replies: []reply{{status: 502}}, retries: 1, wantAttempts: 2, wantKind: notify.KindNotifyFailed, wantStatus: 502},
		{name: "500, no retries", replies: []reply{{status: 500}}, retries: -1, wantAttempts: 1, wantKind: notify.KindNotifyFailed, wantStatus: 500},
		{name: "408 retried", replies: []reply{{status: 408}, {status: 200}}, wantAttempts: 2, wantKind: notify.KindNotified, wantStatus: 200},
		{name: "429 retried", replies: []reply{{status: 429}, {status: 200}}, wantAttempts: 2, wantKind: notify.KindNotified, wantStatus: 200},
		{name: "503 retried", replies: []reply{{status: 503}, {status: 503}, {status: 200}}, wantAttempts: 3, wantKind: notify.KindNotified, wantStatus: 200},
		{name: "400 not retried", replies: []reply{{status: 400}, {status: 200}}, wantAttempts: 1, wantKind: notify.KindNotifyFailed, wantStatus: 400, wantErr: "not retried"},
		{name: "401 not retried", replies: []reply{{status: 401}}, wantAttempts: 1, wantKind: notify.KindNotifyFailed, wantStatus: 401},
		{name: "404 not retried", replies: []reply{{status: 404}}, wantAttempts: 1, wantKind: notify.KindNotifyFailed, wantStatus: 404},
		{name: "410 not retried", replies: []reply{{status: 410}}, wantAttempts: 1, wantKind: notify.KindNotifyFailed, wantStatus: 410},
		{name: "redirect not followed", replies: []reply{{status: 302, header: map[string]string{"Location": "/elsewhere"}}}, wantAttempts: 1, wantKind: notify.KindNotifyFailed, wantStatus: 302},
		{name: "Retry-After seconds", replies: []reply{{status: 429, header: map[string]string{"Retry-After": "7"}}, {status: 200}},
			wantAttempts: 2, wantKind: notify.KindNotified, wantStatus: 200, wantSleeps: []time.Duration{7 * time.Second}},
		{name: "Retry-After date", replies: []reply{{status: 503, header: map[string]string{"Retry-After": retryAt}}, {status: 200}},
			wantAttempts: 2, wantKind: notify.KindNotified, wantStatus: 200, wantSleeps: []time.Duration{30 * time.Second}},
		{name: "Retry-After beyond bound", replies: []reply{{status: 429, header: map[string]string{"Retry-After": "3600"}}, {status: 200}},
			wantAttempts: 1, wantKind: notify.KindNotifyFailed, wantStatus: 429, wantSleeps: []time.Duration{}, wantErr: "Retry-After 1h0m0s is over 2m0s"},
		{name: "Retry-After malformed: backoff", replies: []reply{{status: 429, header: map[string]string{"Retry-After": "soon"}}, {status: 200}},
			wantAttempts: 2, wantKind: notify.KindNotified, wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newReceiver(t, tt.replies...)
			e := newEnv()
			h := jsonHook(rc.URL)
			h.Retries = tt.retries
			n := e.notifier(t, h)

			n.Notify(context.Background(), request(15*time.Minute))

			got := rc.Got()
			require.Len(t, got, tt.wantAttempts)
			recs := e.records.All()
			require.Len(t, recs, 1, "one record per delivery")
			assert.Equal(t, tt.wantKind, recs[0].Kind)
			out := recs[0].Outcome
			assert.Equal(t, tt.wantAttempts, out.Attempts)
			assert.Equal(t, tt.wantStatus, out.Status)
			assert.Equal(t, "ops", out.Webhook)
			assert.Contains(t, out.Error, tt.wantErr)
			if tt.wantKind == notify.KindNotified {
				assert.Empty(t, out.Error)
				assert.Contains(t, e.log.String(), "approval notified")
			} else {
				assert.Contains(t, e.log.String(), "approval notification failed")
			}
			sleeps := e.clock.Sleeps()
			if tt.wantSleeps != nil {
				assert.Equal(t, tt.wantSleeps, append([]time.Duration{}, sleeps...))
			} else {
				assert.Len(t, sleeps, tt.wantAttempts-1)
			}
			// One delivery: one id on every attempt, each attempt signed.
			for _, d := range got {
				assert.Equal(t, out.DeliveryID, d.header.Get(notify.HeaderID))
				assert.NoError(t, notify.Verify(secret, d.header, d.body, e.clock.Now(), 0))
			}
		})
	}
}

func TestBackoffIsBoundedAndGrows(t *testing.T) {
	rc := newReceiver(t, reply{status: 500})
	e := newEnv()
	h := jsonHook(rc.URL)
	h.Retries = notify.MaxRetries
	n := e.notifier(t, h)
	n.Notify(context.Background(), request(time.Hour))

	sleeps := e.clock.Sleeps()
	require.Len(t, sleeps, notify.MaxRetries)
	for i, d := range sleeps {
		full := min(notify.BaseBackoff<<i, notify.MaxBackoff)
		assert.GreaterOrEqual(t, d, full/2, "wait %d", i)
		assert.LessOrEqual(t, d, full, "wait %d", i)
	}
	assert.Len(t, rc.Got(), notify.MaxRetries+1)
}

func TestNoRetryPastExpiry(t *testing.T) {
	tests := []struct {
		name         string
		ttl          time.Duration
		replies      []reply
		wantAttempts int
		wantErr      string
	}{
		// The shortest first wait is BaseBackoff/2: past a request expiring
		// in 100ms.
		{name: "backoff past expiry", ttl: 100 * time.Millisecond, replies: []reply{{status: 500}}, wantAttempts: 1, wantErr: "expires before the next attempt"},
		{name: "Retry-After past expiry", ttl: time.Minute, replies: []reply{{status: 503, header: map[string]string{"Retry-After": "90"}}}, wantAttempts: 1, wantErr: "expires before the next attempt"},
		{name: "expired before the first attempt", ttl: 0, replies: []reply{{status: 200}}, wantAttempts: 0, wantErr: "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newReceiver(t, tt.replies...)
			e := newEnv()
			n := e.notifier(t, jsonHook(rc.URL))
			n.Notify(context.Background(), request(tt.ttl))

			assert.Len(t, rc.Got(), tt.wantAttempts)
			assert.Empty(t, e.clock.Sleeps())
			recs := e.records.All()
			require.Len(t, recs, 1)
			assert.Equal(t, notify.KindNotifyFailed, recs[0].Kind)
			assert.Equal(t, tt.wantAttempts, recs[0].Outcome.Attempts)
			assert.Contains(t, recs[0].Outcome.Error, tt.wantErr)
		})
	}
}

func TestSlowReceiverTimesOut(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	attempts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts++
		mu.Unlock()
		select { // longer than the Timeout: until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	e := newEnv()
	h := jsonHook(srv.URL)
	h.Timeout, h.Retries = 50*time.Millisecond, 2
	n := e.notifier(t, h)
	n.Notify(context.Background(), request(15*time.Minute)) // returns: each attempt is bounded

	mu.Lock()
	assert.LessOrEqual(t, attempts, 3, "an attempt may time out before it arrives")
	mu.Unlock()
	recs := e.records.All()
	require.Len(t, recs, 1)
	assert.Equal(t, notify.KindNotifyFailed, recs[0].Kind)
	assert.Equal(t, 3, recs[0].Outcome.Attempts)
	assert.Contains(t, recs[0].Outcome.Error, "timed out")
	assert.Len(t, e.clock.Sleeps(), 2)
}

func TestReceiverVerifiesSignature(t *testing.T) {
	e := newEnv()
	rc := newReceiver(t)
	rc.check = func(h http.Header, body []byte) int {
		if err := notify.Verify(secret, h, body, e.clock.Now(), time.Minute); err != nil {
			return http.StatusUnauthorized
		}
		return http.StatusOK
	}
	n := e.notifier(t, jsonHook(rc.URL))
	n.Notify(context.Background(), request(15*time.Minute))
	recs := e.records.All()
	require.Len(t, recs, 1)
	assert.Equal(t, notify.KindNotified, recs[0].Kind)

	// A receiver with another secret refuses it, and is not retried.
	e2 := newEnv()
	rc2 := newReceiver(t)
	rc2.check = func(h http.Header, body []byte) int {
		if err := notify.Verify([]byte("another secret, sixteen bytes+"), h, body, e2.clock.Now(), time.Minute); err != nil {
			return http.StatusUnauthorized
		}
		return http.StatusOK
	}
	e2.notifier(t, jsonHook(rc2.URL)).Notify(context.Background(), request(15*time.Minute))
	recs = e2.records.All()
	require.Len(t, recs, 1)
	assert.Equal(t, notify.KindNotifyFailed, recs[0].Kind)
	assert.Len(t, rc2.Got(), 1)
}

func TestJSONEvent(t *testing.T) {
	rc := newReceiver(t)
	e := newEnv()
	n := e.notifier(t, jsonHook(rc.URL))
	r := request(15 * time.Minute)
	n.Notify(context.Background(), r)

	got := rc.Got()
	require.Len(t, got, 1)
	assert.Equal(t, "application/json", got[0].header.Get("Content-Type"))
	assert.Equal(t, "1767323045", got[0].header.Get(notify.HeaderTimestamp))
	var ev map[string]any
	require.NoError(t, json.Unmarshal(got[0].body, &ev))
	assert.Equal(t, "approval.requested", ev["type"])
	assert.Equal(t, r.ID, ev["request_id"])
	assert.Equal(t, "mcp", ev["pipeline"])
	assert.Equal(t, "refund_order", ev["tool"])
	assert.Equal(t, "payments", ev["upstream"])
	assert.Equal(t, "write", ev["effect"])
	assert.Equal(t, map[string]any{"issuer": "https://id.example", "subject": "agent-7", "method": "oidc"}, ev["caller"])
	assert.Equal(t, "2026-01-02T03:04:05Z", ev["created_at"])
	assert.Equal(t, "2026-01-02T03:19:05Z", ev["expires_at"])
	assert.Equal(t, "https://gate.example/approvals/requests/"+r.ID, ev["url"])
	assert.Len(t, ev["findings"], 1)
	args, err := json.Marshal(ev["arguments"])
	require.NoError(t, err)
	assert.JSONEq(t, string(r.Arguments), string(args), "the json format carries the arguments whole")
}

func TestSlackMessage(t *testing.T) {
	tests := []struct {
		name   string
		golden string
		url    bool
		edit   func(*approval.Request)
	}{
		{name: "with page", golden: "slack.golden.json", url: true},
		{name: "without page", golden: "slack-nopage.golden.json"},
		{name: "markup in names", golden: "slack-escaped.golden.json", url: true, edit: func(r *approval.Request) {
			r.Tool, r.Upstream = "<!channel> & <https://evil.example|click>", ""
			r.Caller = nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newReceiver(t)
			e := newEnv()
			o := e.options()
			if !tt.url {
				o.URL = nil
			}
			n, err := notify.New([]notify.Webhook{{Name: "chat", URL: rc.URL, Format: notify.FormatSlack}}, o)
			require.NoError(t, err)
			defer n.Close()
			r := request(15 * time.Minute)
			if tt.edit != nil {
				tt.edit(&r)
			}
			n.Notify(context.Background(), r)

			got := rc.Got()
			require.Len(t, got, 1)
			body := got[0].body
			assert.NotContains(t, string(body), "tok_SECRET", "arguments are never sent to Slack")
			assert.NotContains(t, string(body), "order_id")
			assert.NotContains(t, string(body), "<!channel>")
			assert.Empty(t, got[0].header.Get(notify.HeaderSignature), "unsigned without a secret")

			var msg struct {
				Text   string           `json:"text"`
				Blocks []map[string]any `json:"blocks"`
			}
			require.NoError(t, json.Unmarshal(body, &msg))
			assert.NotEmpty(t, msg.Text)
			require.NotEmpty(t, msg.Blocks)
			var pretty bytes.Buffer
			require.NoError(t, json.Indent(&pretty, body, "", "  "))
			pretty.WriteByte('\n')
			golden(t, filepath.Join("testdata", tt.golden), pretty.Bytes())
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./approval/notify/ -run TestSlackMessage -update")
	assert.Equal(t, string(want), string(got))
}

func TestEveryWebhookConcurrently(t *testing.T) {
	ok, failing, chat := newReceiver(t), newReceiver(t, reply{status: 500}), newReceiver(t)
	e := newEnv()
	failingHook := jsonHook(failing.URL)
	failingHook.Name, failingHook.Retries = "failing", 1
	n, err := notify.New([]notify.Webhook{
		jsonHook(ok.URL),
		failingHook,
		{Name: "chat", URL: chat.URL, Format: notify.FormatSlack, Secret: secret},
	}, e.options())
	require.NoError(t, err)

	const requests = 20
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			r := request(time.Hour)
			r.ID = fmt.Sprintf("rq-%032x", i)
			n.Notify(context.Background(), r)
		})
	}
	wg.Wait()
	n.Close()

	assert.Len(t, ok.Got(), requests)
	assert.Len(t, chat.Got(), requests)
	assert.Len(t, failing.Got(), 2*requests)
	kinds := map[string]int{}
	ids := map[string]bool{}
	for _, r := range e.records.All() {
		kinds[r.Outcome.Webhook+" "+r.Kind]++
		assert.False(t, ids[r.Outcome.DeliveryID], "delivery ids are unique")
		ids[r.Outcome.DeliveryID] = true
	}
	assert.Equal(t, map[string]int{
		"ops " + notify.KindNotified:         requests,
		"chat " + notify.KindNotified:        requests,
		"failing " + notify.KindNotifyFailed: requests,
	}, kinds)
	for _, d := range chat.Got() {
		assert.NoError(t, notify.Verify(secret, d.header, d.body, e.clock.Now(), time.Hour), "a slack hook with a secret is signed")
	}
}

func TestCloseStopsRetries(t *testing.T) {
	rc := newReceiver(t, reply{status: 500})
	e := newEnv()
	o := e.options()
	waiting := make(chan struct{})
	o.Sleep = func(ctx context.Context, d time.Duration) error {
		close(waiting)
		<-ctx.Done() // a wait only Close ends
		return ctx.Err()
	}
	n, err := notify.New([]notify.Webhook{jsonHook(rc.URL)}, o)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Notify(context.Background(), request(time.Hour))
	}()
	<-waiting
	n.Close()
	<-done

	recs := e.records.All()
	require.Len(t, recs, 1)
	assert.Equal(t, notify.KindNotifyFailed, recs[0].Kind)
	assert.Contains(t, recs[0].Outcome.Error, "notifier closed")
	assert.Len(t, rc.Got(), 1)

	n.Notify(context.Background(), request(time.Hour)) // after Close: nothing sent
	assert.Len(t, rc.Got(), 1)
	assert.Len(t, e.records.All(), 1)
}

func TestWebhookURLNeverLogged(t *testing.T) {
	rc := newReceiver(t, reply{status: 500})
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL + "/services/T000/B000/SECRETPATH2"
	down.Close() // refuses connections
	e := newEnv()
	n := e.notifier(t,
		notify.Webhook{Name: "a", URL: rc.URL + "/services/T000/B000/SECRETPATH1", Format: notify.FormatSlack, Retries: 1},
		notify.Webhook{Name: "b", URL: downURL, Format: notify.FormatSlack, Retries: 1},
	)
	n.Notify(context.Background(), request(time.Hour))

	log := e.log.String()
	assert.Contains(t, log, "approval notification failed")
	assert.NotContains(t, log, "SECRETPATH")
	for _, r := range e.records.All() {
		assert.Equal(t, notify.KindNotifyFailed, r.Kind)
		assert.NotContains(t, r.Outcome.Error, "SECRETPATH")
	}
}

func TestDeskNotifies(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusInternalServerError} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			rc := newReceiver(t, reply{status: status})
			e := newEnv()
			n := e.notifier(t, jsonHook(rc.URL))
			a, err := approval.New(approval.Options{Now: e.clock.Now})
			require.NoError(t, err)
			done := make(chan struct{})
			desk, err := approval.NewDesk(approval.DeskOptions{
				Approvals: a, PageURL: "https://gate.example/approvals",
				Notify: func(ctx context.Context, r approval.Request) { n.Notify(ctx, r); close(done) },
			})
			require.NoError(t, err)
			opened, created, err := desk.Open(context.Background(), request(time.Hour))
			require.NoError(t, err)
			require.True(t, created)
			<-done

			got := rc.Got()
			require.NotEmpty(t, got)
			var ev notify.Event
			require.NoError(t, json.Unmarshal(got[0].body, &ev))
			assert.Equal(t, opened.ID, ev.RequestID)
			assert.Equal(t, desk.URL(opened.ID), ev.URL)
			// Delivered or not, the request waits for a person.
			now, err := desk.Get(context.Background(), opened.ID)
			require.NoError(t, err)
			assert.Equal(t, approval.StatePending, now.State)
			assert.Empty(t, now.ApprovalID)
		})
	}
}

func TestNewRejects(t *testing.T) {
	good := func() notify.Webhook {
		return notify.Webhook{Name: "ops", URL: "https://hooks.example/x", Format: notify.FormatJSON, Secret: secret}
	}
	tests := []struct {
		name string
		edit func(*notify.Webhook)
		want string
	}{
		{"no name", func(h *notify.Webhook) { h.Name = "" }, "webhooks[1].name: empty"},
		{"no url", func(h *notify.Webhook) { h.URL = "" }, "webhooks[1].url: empty"},
		{"relative url", func(h *notify.Webhook) { h.URL = "/hook" }, "webhooks[1].url: want an absolute"},
		{"plain http", func(h *notify.Webhook) { h.URL = "http://hooks.example/x" }, "webhooks[1].url: http only to a loopback host"},
		{"other scheme", func(h *notify.Webhook) { h.URL = "ftp://hooks.example/x" }, "webhooks[1].url: scheme \"ftp\""},
		{"credentials", func(h *notify.Webhook) { h.URL = "https://u:p@hooks.example/x" }, "webhooks[1].url: credentials"},
		{"bad url, not quoted", func(h *notify.Webhook) { h.URL = "https://hooks.example/%zzSECRET" }, "webhooks[1].url: not a URL"},
		{"format", func(h *notify.Webhook) { h.Format = "xml" }, "webhooks[1].format: \"xml\""},
		{"no format", func(h *notify.Webhook) { h.Format = "" }, "webhooks[1].format"},
		{"json without secret", func(h *notify.Webhook) { h.Secret = nil }, "webhooks[1].secret: required"},
		{"short secret", func(h *notify.Webhook) { h.Secret = []byte("short") }, "webhooks[1].secret: 5 bytes"},
		{"negative timeout", func(h *notify.Webhook) { h.Timeout = -time.Second }, "webhooks[1].timeout"},
		{"long timeout", func(h *notify.Webhook) { h.Timeout = time.Hour }, "webhooks[1].timeout"},
		{"many retries", func(h *notify.Webhook) { h.Retries = 100 }, "webhooks[1].retries: 100"},
		{"same name", func(h *notify.Webhook) { h.Name = "first" }, "webhooks[1].name: \"first\" is the name of webhooks[0] too"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := good()
			first.Name = "first"
			h := good()
			tt.edit(&h)
			_, err := notify.New([]notify.Webhook{first, h}, notify.Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "SECRET")
		})
	}
	for _, u := range []string{"http://127.0.0.1:8080/hook", "http://localhost/hook", "http://[::1]:9/hook", "https://hooks.slack.com/services/T/B/X"} {
		h := good()
		h.URL = u
		_, err := notify.New([]notify.Webhook{h}, notify.Options{})
		assert.NoError(t, err, u)
	}
	_, err := notify.New([]notify.Webhook{{Name: "chat", URL: "https://hooks.example/x", Format: notify.FormatSlack}}, notify.Options{})
	assert.NoError(t, err, "slack needs no secret")
}

func TestDefaultSleepAndContext(t *testing.T) {
	t.Run("real timer", func(t *testing.T) {
		rc := newReceiver(t, reply{status: 500}, reply{status: 200})
		e := newEnv()
		o := e.options()
		o.Sleep, o.Now = nil, nil // a real wait of BaseBackoff at most
		n, err := notify.New([]notify.Webhook{jsonHook(rc.URL)}, o)
		require.NoError(t, err)
		defer n.Close()
		r := request(time.Hour)
		r.CreatedAt, r.ExpiresAt = time.Now(), time.Now().Add(time.Hour)
		n.Notify(context.Background(), r)
		assert.Len(t, rc.Got(), 2)
		recs := e.records.All()
		require.Len(t, recs, 1)
		assert.Equal(t, notify.KindNotified, recs[0].Kind)
	})
	t.Run("context ended", func(t *testing.T) {
		rc := newReceiver(t)
		e := newEnv()
		n := e.notifier(t, jsonHook(rc.URL))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		n.Notify(ctx, request(time.Hour))
		assert.Empty(t, rc.Got())
		recs := e.records.All()
		require.Len(t, recs, 1)
		assert.Equal(t, notify.KindNotifyFailed, recs[0].Kind)
		assert.Contains(t, recs[0].Outcome.Error, "the context ended")
	})
}

func TestJSONEventOfABareRequest(t *testing.T) {
	r := request(time.Hour)
	r.Arguments, r.Findings, r.Caller, r.Upstream, r.Effect = nil, nil, nil, "", ""
	body, err := json.Marshal(notify.NewEvent(r, ""))
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(body, &ev))
	assert.Nil(t, ev["arguments"])
	assert.Contains(t, ev, "arguments")
	assert.Equal(t, []any{}, ev["findings"])
	assert.Equal(t, "", ev["url"])
	assert.NotContains(t, ev, "caller")
	assert.NotContains(t, ev, "upstream")
}
