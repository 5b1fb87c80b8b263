// The audit workbench's keyboard: digits answer with an option, n "none of these", s skip, u back.
// Each key clicks the page's own button (data-key), so keyboard and mouse take the same path.
"use strict";
(function () {
  var sent = false;
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT")) {
      if (event.key === "Escape") { target.blur(); }
      return;  // typing a note or signing in: keys are text
    }
    if (event.ctrlKey || event.metaKey || event.altKey || sent) { return; }
    var button = document.querySelector('button[data-key="' + CSS.escape(event.key) + '"]');
    if (!button) { return; }
    event.preventDefault();
    sent = true;  // one answer per page: a second key press before the next page is ignored
    button.click();
  });
  window.addEventListener("pageshow", function () { sent = false; });
}());
