// memlane web UI: the few behaviours htmx does not cover. No eval, no inline handlers (CSP).
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    // "select all" for the bulk actions
    document.body.addEventListener("change", function (ev) {
      var t = ev.target;
      if (t && t.id === "select-all") {
        document.querySelectorAll("input.pick").forEach(function (box) { box.checked = t.checked; });
      }
      // a chosen file fills the import textarea (read in the browser, nothing uploaded yet)
      if (t && t.type === "file" && t.dataset.fill) {
        var file = t.files && t.files[0];
        var area = document.getElementById(t.dataset.fill);
        if (file && area) {
          file.text().then(function (text) { area.value = text; area.focus(); });
        }
      }
    });
    // plain forms that destroy something ask first (the table rows confirm inline instead)
    document.body.addEventListener("submit", function (ev) {
      var form = ev.target;
      if (form && form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
        ev.preventDefault();
      }
    });
  });
  // a swapped-in element marked data-autofocus gets the focus (keyboard users stay in place);
  // after the settle, when htmx has wired the new content, so a quick Enter goes through htmx
  // too. Not the autofocus attribute: the browser honours it on insertion, before htmx's settle,
  // and an Enter in that window posted the form natively (a full page load)
  document.addEventListener("htmx:afterSettle", function (ev) {
    var el = ev.detail && ev.detail.elt;
    var focus = el && el.querySelector ? el.querySelector("[data-autofocus]") : null;
    if (!focus && el && el.parentNode) {
      var row = document.getElementById(el.id);
      focus = row ? row.querySelector("[data-autofocus]") : null;
    }
    if (focus) { focus.focus(); }
  });
  // clear a previous error when the next request succeeds
  document.addEventListener("htmx:beforeRequest", function () {
    var alert = document.getElementById("alert");
    if (alert) { alert.textContent = ""; }
  });
})();
