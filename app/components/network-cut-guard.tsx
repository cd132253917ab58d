import { useNonce } from "./nonce";

// A console page whose own requests the browser cut comes back whole. Chrome cancels every request
// in flight, loopback ones included, whenever a network interface or address comes or goes
// (net::ERR_NETWORK_CHANGED), and a Docker engine on the same machine adds and removes them as
// boxes start and go (ADR 0003: a bridge per box). A page that lost its stylesheet that way lays
// out unstyled, one that lost a module never hydrates, and a navigation whose data was cut shows
// the error page; a reload or a second try mends each. So, before anything else on the page:
// - while the page loads, a stylesheet, module preload or script of this server's that failed
//   loads the page again, at most twice in 15 s (then the page stays as it is: a server that is
//   down is not asked again and again);
// - a GET or HEAD fetch of this server's that failed on the network (not an HTTP error, not an
//   abort) is tried once more, 150 ms later: the console's data loads are all GETs. Changes
//   (POST, PUT, DELETE) are never sent twice.
// Inline and plain ES5 (no module, nothing to load): it has to be in place before the first
// request it watches. Hand-written rather than fetch-retry's wrapper: the rule is which requests
// may be sent twice, which the wrapper leaves to its caller anyway.

const GUARD = `(function () {
  var KEY = "holm:reloads", WINDOW_MS = 15000, MAX_RELOADS = 2;
  var own = function (url) { try { return new URL(url, location.href).origin === location.origin; } catch (e) { return false; } };
  var loading = true;
  var reload = function () {
    if (!loading) return;
    var now = Date.now(), past = [];
    try { past = JSON.parse(sessionStorage.getItem(KEY) || "[]").filter(function (t) { return now - t < WINDOW_MS; }); } catch (e) {}
    if (past.length >= MAX_RELOADS) return;
    past.push(now);
    try { sessionStorage.setItem(KEY, JSON.stringify(past)); } catch (e) { return; }
    loading = false;
    location.reload();
  };
  window.addEventListener("error", function (e) {
    var el = e.target;
    if (!el || el === window || !el.tagName) return;
    if (el.tagName === "LINK" && /(^|\\s)(stylesheet|modulepreload)(\\s|$)/.test(el.rel) && own(el.href)) reload();
    else if (el.tagName === "SCRIPT" && (!el.src || own(el.src))) reload();
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    if (e.reason instanceof TypeError && /dynamically imported module|module script/i.test(String(e.reason.message))) reload();
  });
  window.addEventListener("load", function () { setTimeout(function () { loading = false; }, 1000); });
  var fetch0 = window.fetch;
  if (!fetch0) return;
  window.fetch = function (input, init) {
    var req = input instanceof Request ? input : null;
    var method = String((init && init.method) || (req && req.method) || "GET").toUpperCase();
    var url = req ? req.url : String(input);
    var first = fetch0.call(window, input, init);
    if ((method !== "GET" && method !== "HEAD") || !own(url)) return first;
    return first.catch(function (err) {
      var signal = (init && init.signal) || (req && req.signal);
      if (!(err instanceof TypeError) || (signal && signal.aborted)) throw err;
      return new Promise(function (resolve) { setTimeout(resolve, 150); }).then(function () {
        return fetch0.call(window, input, init);
      });
    });
  };
})();`;

/** Put first in <head>, before the stylesheets and scripts it watches. With the page's nonce: inline. */
export function NetworkCutGuard() {
  const nonce = useNonce();
  return <script nonce={nonce} suppressHydrationWarning dangerouslySetInnerHTML={{ __html: GUARD }} />;
}
