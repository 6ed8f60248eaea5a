package page

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
)

// data is what every template is given.
type data struct {
	Title, Prefix, Me, CSRF string
	Live                    bool // load the script of live updates
	// Sign-in.
	TokenSignin, OIDCSignin bool
	Next, Message           string
	// The list, or one request.
	Requests []view
	// More are requests listed by name only (listFull, listBytes).
	More    []view
	Pending int
	Version string
	// Settle is how long, in milliseconds, page.js holds back a decision
	// whose button a live update has just moved or added.
	Settle int
	One    bool
	// An error.
	Status int
	Detail string
}

func (h *handler) base(title string, s *session) data {
	d := data{Title: title, Prefix: h.prefix, Settle: settleMillis}
	if s != nil {
		d.CSRF = s.CSRF
		d.Me = principalName(s.P)
	}
	return d
}

func (h *handler) render(w http.ResponseWriter, status int, name string, d data) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	if err := h.tmpl.ExecuteTemplate(&b, name, d); err != nil {
		h.o.Logger.Error("approval page: template", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail shows an error page.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, s *session, status int, title, detail string) {
	d := h.base(title, s)
	d.Status, d.Detail = status, detail
	h.render(w, status, "error", d)
}

// approver returns the session of a signed-in approver, or answers
// itself: a GET without a sign-in goes to the sign-in page, a principal
// who is not an approver sees 403.
func (h *handler) approver(w http.ResponseWriter, r *http.Request) (*session, bool) {
	s := h.cookie.session(r)
	if s == nil || s.P == nil {
		if r.Method == http.MethodGet && r.URL.Path != h.prefix+"/events" {
			http.Redirect(w, r, h.prefix+"/signin?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
		} else {
			h.fail(w, r, s, http.StatusUnauthorized, "Sign in", "Sign in to decide requests.")
		}
		return nil, false
	}
	if err := h.desk.Rule().MayApprove(s.P); err != nil {
		h.o.Logger.Warn("approval page: not an approver", "principal", principalName(s.P), "path", r.URL.Path)
		h.fail(w, r, s, http.StatusForbidden, "Not an approver",
			"You are signed in as "+principalName(s.P)+", who is not one of the approvers this gateway names. "+
				"Sign out and sign in as an approver, or ask the operator to name you as one.")
		return nil, false
	}
	return s, true
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	s, ok := h.approver(w, r)
	if !ok {
		return
	}
	rs, err := h.desk.List(r.Context())
	if err != nil {
		h.o.Logger.Error("approval page: list", "err", err)
		h.fail(w, r, s, http.StatusServiceUnavailable, "Unavailable", "The requests could not be read. Try again shortly.")
		return
	}
	now := h.o.Now()
	d := h.base("Calls waiting for approval", s)
	d.Live, d.Version = true, signature(rs, now)
	order(rs, now)
	rendered := 0
	for _, q := range rs {
		if q.Pending(now) {
			d.Pending++
		}
		v := h.view(q, s.P, s.CSRF, "list")
		// Counted as rendered, so that what an agent sends cannot make
		// the list, and each live update's fetch of it, large: a request
		// that does not fit is named, and shown whole on its own page.
		if len(d.Requests) >= listFull || rendered+v.Rendered > listBytes {
			v.Args, v.Diffs, v.MoreDiffs = "", nil, 0
			d.More = append(d.More, v)
			continue
		}
		rendered += v.Rendered
		d.Requests = append(d.Requests, v)
	}
	h.render(w, http.StatusOK, "list", d)
}

func (h *handler) one(w http.ResponseWriter, r *http.Request) {
	s, ok := h.approver(w, r)
	if !ok {
		return
	}
	q, err := h.desk.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		h.decideFailed(w, r, s, err)
		return
	}
	rs, _ := h.desk.List(r.Context())
	d := h.base("Request for "+q.Tool, s)
	d.Live, d.One, d.Version = true, true, signature(rs, h.o.Now())
	d.Requests = []view{h.view(q, s.P, s.CSRF, "request")}
	h.render(w, http.StatusOK, "list", d)
}

// decide is an approver's answer: approve or deny, with an optional note.
func (h *handler) decide(w http.ResponseWriter, r *http.Request) {
	s := h.cookie.session(r)
	if !h.readForm(w, r, s) {
		return
	}
	s, ok := h.approver(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	var approve bool
	switch r.PostForm.Get("decision") {
	case "approve":
		approve = true
	case "deny":
	default:
		h.fail(w, r, s, http.StatusBadRequest, "Bad request", "Choose Approve or Deny.")
		return
	}
	note := strings.TrimSpace(r.PostForm.Get("note"))
	if len(note) > approval.MaxNoteBytes {
		h.fail(w, r, s, http.StatusBadRequest, "Reason too long",
			fmt.Sprintf("The reason is %d bytes; at most %d fit.", len(note), approval.MaxNoteBytes))
		return
	}
	got, err := h.desk.Decide(r.Context(), id, s.P, approve, note)
	if err != nil {
		h.decideFailed(w, r, s, err)
		return
	}
	h.o.Logger.Info("approval page: decided", "request_id", id, "state", got.State, "approver", principalName(s.P))
	back := h.prefix + "/#" + id
	if r.PostForm.Get("from") == "request" {
		back = h.prefix + "/requests/" + id
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// decideFailed shows why a request cannot be shown or decided.
func (h *handler) decideFailed(w http.ResponseWriter, r *http.Request, s *session, err error) {
	switch {
	case errors.Is(err, approval.ErrSelfApproval):
		h.o.Logger.Warn("approval page: self-approval refused", "request_id", r.PathValue("id"), "principal", principalName(s.P))
		h.fail(w, r, s, http.StatusForbidden, "Not yours to decide", "You made this call; another approver must decide it.")
	case errors.Is(err, approval.ErrNotApprover):
		h.fail(w, r, s, http.StatusForbidden, "Not an approver", "You are not one of the approvers this gateway names.")
	case errors.Is(err, approval.ErrDecided):
		h.fail(w, r, s, http.StatusConflict, "Decided already", "This request was decided already; its page shows the decision.")
	case errors.Is(err, approval.ErrRequestExpired):
		h.fail(w, r, s, http.StatusGone, "Expired", "This request expired before it was decided; the call was not made.")
	case errors.Is(err, approval.ErrNoRequest):
		h.fail(w, r, s, http.StatusNotFound, "No such request",
			"There is no such request: it expired and was removed, or it never existed.")
	default:
		h.o.Logger.Error("approval page: request", "request_id", r.PathValue("id"), "err", err)
		h.fail(w, r, s, http.StatusServiceUnavailable, "Not recorded", "The decision could not be recorded, so nothing was decided. Try again shortly.")
	}
}

// events is the list's event stream: "changed" with the list's version
// when it differs from the last one sent, at once when this process
// changes it and at each poll for other replicas' changes and expiries.
// It ends when the sign-in ends or its principal may no longer approve.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	s, ok := h.approver(w, r)
	if !ok {
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 3000\n\n"); err != nil {
		return
	}
	_ = rc.Flush()
	poll := time.NewTicker(h.desk.Poll())
	defer poll.Stop()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	ctx, last := r.Context(), ""
	for {
		changed := h.desk.Changed()
		now := h.o.Now()
		if now.Unix() >= s.Exp {
			return // the sign-in ended: the page's next load asks for another
		}
		rs, err := h.desk.List(ctx)
		// The rule as it is now, after the read, before anything is sent:
		// an approver removed, or whose token was, hears of no more change.
		if err := h.desk.Rule().MayApprove(s.P); err != nil {
			h.o.Logger.Warn("approval page: event stream ended: no longer an approver", "principal", principalName(s.P), "err", err)
			return
		}
		if err == nil {
			if v := signature(rs, now); v != last {
				if _, err := fmt.Fprintf(w, "event: changed\ndata: %s\n\n", v); err != nil {
					return
				}
				_ = rc.Flush()
				last = v
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-poll.C:
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			_ = rc.Flush()
		}
	}
}

func (h *handler) signinPage(w http.ResponseWriter, r *http.Request) {
	s := h.cookie.session(r)
	next := h.next(r.URL.Query().Get("next"))
	if s != nil && s.P != nil && h.desk.Rule().MayApprove(s.P) == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	h.renderSignin(w, r, s, http.StatusOK, "")
}

// renderSignin shows the sign-in page, starting a session (not signed in)
// for its form's CSRF token when there is none.
func (h *handler) renderSignin(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	if s == nil {
		s, _ = h.cookie.start(w, nil) // no principal: it always fits
	}
	d := h.base("Sign in", s)
	d.TokenSignin, d.OIDCSignin = h.o.Token != nil, h.oidc != nil
	d.Next, d.Message = h.next(r.FormValue("next")), msg
	h.render(w, status, "signin", d)
}

func (h *handler) signinToken(w http.ResponseWriter, r *http.Request) {
	s := h.cookie.session(r)
	if h.o.Token == nil {
		h.fail(w, r, s, http.StatusNotFound, "Not found", "Token sign-in is not configured.")
		return
	}
	if !h.readForm(w, r, s) {
		return
	}
	if ok, limit := h.tries.allow(clientOf(r), h.o.Now()); !ok {
		h.o.Logger.Warn("approval page: token sign-in throttled", "remote", r.RemoteAddr, "limit", limit)
		h.renderSignin(w, r, s, http.StatusTooManyRequests, "Too many sign-in attempts. Wait a minute and try again.")
		return
	}
	var p *abi.Principal
	if given := strings.TrimSpace(r.PostForm.Get("token")); given != "" {
		p = h.o.Token(given)
	}
	if p == nil {
		h.o.Logger.Warn("approval page: token sign-in refused")
		h.renderSignin(w, r, s, http.StatusUnauthorized, "That is not an approver token.")
		return
	}
	if _, err := h.cookie.start(w, p); err != nil { // a new CSRF token with the sign-in
		h.o.Logger.Error("approval page: token sign-in", "principal", principalName(p), "err", err)
		h.renderSignin(w, r, s, http.StatusUnprocessableEntity, "Sign-in failed: "+err.Error()+".")
		return
	}
	h.o.Logger.Info("approval page: signed in", "method", p.Method, "principal", principalName(p))
	http.Redirect(w, r, h.next(r.PostForm.Get("next")), http.StatusSeeOther)
}

func (h *handler) signout(w http.ResponseWriter, r *http.Request) {
	s := h.cookie.session(r)
	if !h.readForm(w, r, s) {
		return
	}
	h.cookie.clear(w, sessionCookie)
	if s.P != nil {
		h.o.Logger.Info("approval page: signed out", "principal", principalName(s.P))
	}
	http.Redirect(w, r, h.prefix+"/signin", http.StatusSeeOther)
}
