// stallscope report: draws the figures embedded as JSON, and sorts/filters the index table.
(function () {
  "use strict";
  function drawAll() {
    var divs = document.querySelectorAll("div.plot[data-figure]");
    divs.forEach(function (div) {
      var spec = JSON.parse(document.getElementById(div.getAttribute("data-figure")).textContent);
      var config = { responsive: true, displaylogo: false, scrollZoom: false,
                     toImageButtonOptions: { format: "png", filename: div.id } };
      Plotly.newPlot(div, spec.data, spec.layout, config).then(function () {
        div.setAttribute("data-drawn", "1");
      });
    });
  }
  function sortTable(table, col, numeric, dir) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute("data-sort") || a.cells[col].textContent;
      var y = b.cells[col].getAttribute("data-sort") || b.cells[col].textContent;
      var r = numeric ? (parseFloat(x) - parseFloat(y)) : x.localeCompare(y);
      return dir === "ascending" ? r : -r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  function setUpIndex() {
    var table = document.getElementById("index");
    if (!table) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      function sort() {
        var dir = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (o) { o.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir);
        sortTable(table, col, th.classList.contains("num"), dir);
      }
      th.tabIndex = 0;  // sortable from the keyboard too
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
    var input = document.getElementById("filter");
    input.addEventListener("input", function () {
      var q = input.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        r.hidden = q !== "" && r.textContent.toLowerCase().indexOf(q) < 0;
      });
    });
  }
  // On paper every folded list is shown (the findings are the report); folded again afterwards.
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) {
      d.setAttribute("open", ""); d.setAttribute("data-print-opened", "1");
    });
  });
  window.addEventListener("afterprint", function () {
    document.querySelectorAll("details[data-print-opened]").forEach(function (d) {
      d.removeAttribute("open"); d.removeAttribute("data-print-opened");
    });
  });
  setUpIndex();
  drawAll();
})();
