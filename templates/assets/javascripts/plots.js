/* Draw every <div class="bench-plot" data-figure="..."> with plotly.js.
   Runs on material's document$ (first load and every instant navigation) AND on DOMContentLoaded,
   because document$ never emits on file:// while navigation.instant is on. Idempotent via data-rendered. */
(function () {
  "use strict";
  function themeLayout() {
    var s = getComputedStyle(document.body);
    var fg = s.getPropertyValue("--md-default-fg-color").trim() || "#333";
    var grid = s.getPropertyValue("--md-default-fg-color--lightest").trim() || "#ddd";
    return {"paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)", "font.color": fg,
            "xaxis.gridcolor": grid, "yaxis.gridcolor": grid, "legend.font.color": fg};
  }
  function renderAll() {
    if (typeof Plotly === "undefined") { return; }
    document.querySelectorAll("div.bench-plot[data-figure]:not([data-rendered])").forEach(function (el) {
      var fig = JSON.parse(el.getAttribute("data-figure"));
      el.setAttribute("data-rendered", "1");
      var config = Object.assign({responsive: true, displaylogo: false}, fig.config || {});
      Plotly.newPlot(el, fig.data, fig.layout || {}, config).then(function () {
        el.setAttribute("data-drawn", "1");
        return Plotly.relayout(el, themeLayout());
      });
    });
  }
  function retheme() {
    document.querySelectorAll("div.bench-plot[data-drawn]").forEach(function (el) {
      Plotly.relayout(el, themeLayout());
    });
  }
  if (typeof document$ !== "undefined") { document$.subscribe(renderAll); }
  document.addEventListener("DOMContentLoaded", renderAll);
  document.addEventListener("DOMContentLoaded", function () {
    new MutationObserver(retheme).observe(document.body, {attributes: true, attributeFilter: ["data-md-color-scheme"]});
  });
})();
