(function () {
  'use strict';
  var tests = Array.prototype.slice.call(document.querySelectorAll('details.test'));
  var rows = Array.prototype.slice.call(document.querySelectorAll('tr[data-test]'));
  var search = document.getElementById('filter');
  var outcome = document.getElementById('outcome');
  var shown = document.getElementById('shown');
  function applyFilter() {
    var q = search.value.trim().toLowerCase();
    var want = outcome.value;
    var count = 0;
    tests.forEach(function (el, i) {
      var ok = (!q || el.dataset.nodeid.toLowerCase().indexOf(q) !== -1) &&
        (!want || el.dataset.outcome === want ||
         (want === 'attention' && el.dataset.attention === '1'));
      el.classList.toggle('hidden', !ok);
      if (rows[i]) { rows[i].classList.toggle('hidden', !ok); }
      if (ok) { count += 1; }
    });
    shown.textContent = String(count);
  }
  search.addEventListener('input', applyFilter);
  outcome.addEventListener('change', applyFilter);
  function setAll(selector, open) {
    document.querySelectorAll(selector).forEach(function (el) {
      if (!el.classList.contains('hidden')) { el.open = open; }
    });
  }
  document.getElementById('expand-tests').addEventListener('click', function () {
    setAll('details.test', true);
  });
  document.getElementById('collapse-all').addEventListener('click', function () {
    setAll('details.it', false);
    setAll('details.test', false);
  });
  function reveal(id) {
    var el = id ? document.getElementById(id) : null;
    if (!el) { return; }
    for (var node = el; node; node = node.parentElement) {
      if (node.tagName === 'DETAILS') { node.open = true; }
    }
    el.scrollIntoView({block: 'nearest'});
  }
  document.addEventListener('click', function (event) {
    var link = event.target.closest ? event.target.closest('a[href^="#"]') : null;
    if (link) { reveal(decodeURIComponent(link.getAttribute('href').slice(1))); }
  });
  if (location.hash) { reveal(decodeURIComponent(location.hash.slice(1))); }
  applyFilter();
})();
