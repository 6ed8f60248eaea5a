// Live updates of the approval page: the server's event stream says when
// the list changed; the page is fetched again and the list brought up to
// date in place, keeping any reason being typed. Without this script a
// reload shows the same.
//
// A click must decide the request the approver aimed at, never one an
// update slid under the pointer. So an update keeps each request's node
// where it is (adding and removing around it, then scrolling so that the
// request under the pointer stays put), and notes every decision button it
// moved or added; a decision sent with such a button within the list's
// settle time (data-settle, in milliseconds) is held back with a notice.
(function () {
  'use strict';
  var list = document.getElementById('requests');
  if (!list || !window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }
  var live = document.getElementById('live');
  var busy = false;
  var again = false;
  var pointer = null; // where the pointer last was, in the viewport
  var movedAt = {}; // decision button id -> when an update last moved it
  var sources = {}; // list child key -> its markup as the server sent it
  var pad = 0; // room added below the list to hold the anchor in place

  function settle() {
    var ms = parseInt(list.getAttribute('data-settle'), 10);
    return ms >= 0 ? ms : 1000;
  }

  function children(el) {
    return Array.prototype.slice.call(el.children);
  }

  // key names a child of the list across updates: a request by its id.
  function key(el) {
    return el.id || el.className;
  }

  // source is el's markup without what changes with the clock alone.
  function source(el) {
    var c = el.cloneNode(true);
    c.querySelectorAll('.left').forEach(function (l) { l.textContent = ''; });
    return c.outerHTML;
  }

  // places are where the decision buttons are in the viewport.
  function places() {
    var at = {};
    list.querySelectorAll('button[name=decision]').forEach(function (b) {
      var r = b.getBoundingClientRect();
      at[b.id] = [r.left, r.top, r.width, r.height];
    });
    return at;
  }

  // anchor is the request to hold in place: the one under the pointer,
  // else the one holding the focus, else the first one in view.
  function anchor() {
    var el = pointer && document.elementFromPoint(pointer.x, pointer.y);
    if (!(el && list.contains(el)) && list.contains(document.activeElement)) {
      el = document.activeElement;
    }
    while (el && el.parentElement !== list) {
      el = el.parentElement;
    }
    if (el) {
      return el;
    }
    return children(list).filter(function (c) { return c.getBoundingClientRect().bottom > 0; })[0] || null;
  }

  // paint marks the forms whose buttons are still settling.
  function paint() {
    var now = performance.now();
    list.querySelectorAll('form.decide').forEach(function (f) {
      var settling = Array.prototype.some.call(f.querySelectorAll('button[name=decision]'), function (b) {
        return now - movedAt[b.id] < settle();
      });
      f.classList.toggle('settling', settling);
    });
  }

  // mutate runs change, keeps the anchor request where it was, and notes
  // each decision button that change added or moved (by more than a
  // rounding of the scroll).
  function mutate(change) {
    var a = anchor();
    var k = a && key(a);
    var top = a ? a.getBoundingClientRect().top : 0;
    var before = places();
    change();
    var held = k && children(list).filter(function (c) { return key(c) === k; })[0];
    if (held) {
      var d = held.getBoundingClientRect().top - top;
      var room = document.documentElement.scrollHeight - window.innerHeight - window.scrollY;
      if (d > room) {
        // Too little page below to scroll by: room at the list's end.
        pad += d - room;
        list.style.paddingBottom = pad + 'px';
      }
      if (Math.abs(d) >= 1) {
        window.scrollBy(0, d);
      }
    }
    var after = places();
    var t = performance.now();
    Object.keys(after).forEach(function (b) {
      var p = before[b], q = after[b];
      if (!p || p.some(function (v, i) { return Math.abs(v - q[i]) > 2; })) {
        movedAt[b] = t;
      }
    });
    paint();
    setTimeout(paint, settle() + 1);
  }

  // update brings the list's children to fresh's, keeping each one whose
  // markup is unchanged.
  function update(fresh) {
    var notes = {};
    list.querySelectorAll('textarea').forEach(function (t) { notes[t.id] = t.value; });
    var focused = list.contains(document.activeElement) ? document.activeElement.id : '';
    var old = {};
    var next = {};
    children(list).forEach(function (el) { old[key(el)] = el; });
    var want = children(fresh).map(function (el) {
      var k = key(el);
      var src = source(el);
      var cur = old[k];
      next[k] = src;
      if (cur && sources[k] === src) {
        var from = el.querySelectorAll('.left');
        cur.querySelectorAll('.left').forEach(function (l, i) {
          if (from[i]) {
            l.textContent = from[i].textContent;
          }
        });
        return cur;
      }
      var n = document.importNode(el, true);
      n.querySelectorAll('textarea').forEach(function (t) {
        if (notes[t.id]) {
          t.value = notes[t.id];
        }
      });
      return n;
    });
    children(list).forEach(function (el) {
      if (want.indexOf(el) < 0) {
        el.remove();
      }
    });
    want.forEach(function (el, i) {
      if (list.children[i] !== el) {
        list.insertBefore(el, list.children[i] || null);
      }
    });
    sources = next;
    list.setAttribute('data-version', fresh.getAttribute('data-version'));
    if (focused && !list.contains(document.activeElement) && document.getElementById(focused)) {
      document.getElementById(focused).focus({ preventScroll: true });
    }
  }

  function say(text) {
    if (live) {
      live.textContent = text;
    }
  }

  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(window.location.pathname, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (r) {
        if (r.status === 401 || r.status === 403 || r.status === 404 || r.status === 410) {
          // Signed out, or the request is gone: the page says which.
          window.location.reload();
          return null;
        }
        if (!r.ok) {
          throw new Error('status ' + r.status);
        }
        return r.text();
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var fresh = new DOMParser().parseFromString(html, 'text/html').getElementById('requests');
        if (!fresh) {
          // Sent to the sign-in page: the sign-in ended.
          window.location.reload();
          return;
        }
        mutate(function () {
          update(fresh);
          say('Updated at ' + new Date().toLocaleTimeString() + '.');
        });
      })
      .catch(function () {
        mutate(function () { say('Could not update; reload the page to see the current state.'); });
      })
      .finally(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  // hold refuses a decision whose button an update moved or added within
  // the settle time: the approver aimed at what was there before.
  function hold(e) {
    var form = e.target;
    if (!list.contains(form) || !form.classList.contains('decide')) {
      return;
    }
    var bs = e.submitter ? [e.submitter] : Array.prototype.slice.call(form.querySelectorAll('button[name=decision]'));
    var now = performance.now();
    if (!bs.some(function (b) { return now - movedAt[b.id] < settle(); })) {
      return;
    }
    e.preventDefault();
    mutate(function () {
      var p = form.querySelector('.settle-notice');
      if (!p) {
        p = document.createElement('p');
        p.className = 'notice settle-notice';
        p.setAttribute('role', 'alert');
        form.appendChild(p);
      }
      p.textContent = 'The list just changed; check the request and click again.';
    });
  }

  function track(e) {
    pointer = { x: e.clientX, y: e.clientY };
  }

  children(list).forEach(function (el) { sources[key(el)] = source(el); });
  document.addEventListener('mousemove', track, { passive: true });
  document.addEventListener('pointerdown', track, { passive: true });
  document.addEventListener('submit', hold);

  var events = new EventSource(list.getAttribute('data-events'));
  events.addEventListener('changed', function (e) {
    if (e.data !== list.getAttribute('data-version')) {
      refresh();
    }
  });
}());
