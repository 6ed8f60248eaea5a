// Live updates of the approval page: the server's event stream says when
// the list changed; the page is fetched again and its list swapped in,
// keeping any reason being typed. Without this script a reload shows the
// same.
(function () {
  'use strict';
  var list = document.getElementById('requests');
  if (!list || !window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }
  var live = document.getElementById('live');
  var busy = false;
  var again = false;

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
        var notes = {};
        list.querySelectorAll('textarea').forEach(function (t) { notes[t.id] = t.value; });
        var focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.id : '';
        list.replaceChildren.apply(list, Array.prototype.map.call(fresh.childNodes, function (n) {
          return document.importNode(n, true);
        }));
        list.setAttribute('data-version', fresh.getAttribute('data-version'));
        list.querySelectorAll('textarea').forEach(function (t) {
          if (notes[t.id]) {
            t.value = notes[t.id];
          }
        });
        if (focused && document.getElementById(focused)) {
          document.getElementById(focused).focus();
        }
        if (live) {
          live.textContent = 'Updated at ' + new Date().toLocaleTimeString() + '.';
        }
      })
      .catch(function () {
        if (live) {
          live.textContent = 'Could not update; reload the page to see the current state.';
        }
      })
      .finally(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  var events = new EventSource(list.getAttribute('data-events'));
  events.addEventListener('changed', function (e) {
    if (e.data !== list.getAttribute('data-version')) {
      refresh();
    }
  });
}());
