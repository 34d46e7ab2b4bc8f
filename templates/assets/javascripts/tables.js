/* Sortable tables (vendored tablesort) and the filter boxes above them.
   Tables are marked with data-sortable (never a class: material styles only table:not([class])).
   Same double hook as plots.js: document$ for instant navigation, DOMContentLoaded for file://. */
(function () {
  "use strict";
  function bindFilter(inp) {
    inp.setAttribute("data-bound", "1");
    inp.addEventListener("input", function () {
      var q = inp.value.toLowerCase();
      var table = document.getElementById(inp.getAttribute("data-filter-for"));
      if (!table) { return; }
      Array.prototype.forEach.call(table.tBodies[0].rows, function (tr) {
        tr.style.display = tr.textContent.toLowerCase().indexOf(q) >= 0 ? "" : "none";
      });
    });
  }
  function initTables() {
    if (typeof Tablesort === "undefined") { return; }
    document.querySelectorAll("article table[data-sortable]:not([data-ts])").forEach(function (t) {
      new Tablesort(t);
      t.setAttribute("data-ts", "1");
    });
    document.querySelectorAll("input.bench-filter:not([data-bound])").forEach(bindFilter);
  }
  if (typeof document$ !== "undefined") { document$.subscribe(initTables); }
  document.addEventListener("DOMContentLoaded", initTables);
})();
