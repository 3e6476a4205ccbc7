// Keeps a running comparison's page current: polls the comparison's JSON
// every 5 seconds and reloads the page when its status, its stored runs,
// what it waits for or any job changed.
(function () {
  "use strict";
  var el = document.getElementById("live");
  if (!el) {
    return;
  }
  var url = el.getAttribute("data-url");
  var last = null;
  function key(c) {
    return [c.status, c.updated_at, c.runs.base, c.runs.patched, c.waiting || ""]
      .concat(c.jobs.map(function (j) { return j.state + j.updated_at; }))
      .join("|");
  }
  function poll() {
    fetch(url, { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (c) {
        if (c) {
          var k = key(c);
          if (last !== null && k !== last) {
            window.location.reload();
            return;
          }
          last = k;
          el.textContent = "live: " + c.status + "; " + c.runs.base + " base and " +
            c.runs.patched + " patched runs stored of " + c.runs.expected_per_side +
            " a side; this page reloads when that changes";
        }
        window.setTimeout(poll, 5000);
      })
      .catch(function () { window.setTimeout(poll, 5000); });
  }
  poll();
})();
