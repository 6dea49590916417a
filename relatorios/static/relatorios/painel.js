// The support admin's operations dashboard (/admin/painel/): draws each chart
// from the page's JSON (<script type="application/json">, never run) with
// the vendored Chart.js. Nothing inline, so the admin's strict CSP holds.
// Each figure stays hidden until drawn: without JavaScript the page keeps
// its numbers and the clusters' table.
(function () {
  "use strict";

  var numero = new Intl.NumberFormat("pt-BR", { maximumFractionDigits: 1 });
  // A label longer than this is drawn on several lines (Chart.js takes an
  // array), so a long failure reason is wrapped, never clipped.
  var LINHA = 40;

  function quebrar(texto) {
    if (typeof texto !== "string" || texto.length <= LINHA) return texto;
    var linhas = [], atual = "";
    texto.split(" ").forEach(function (palavra) {
      if (atual && (atual + " " + palavra).length > LINHA) {
        linhas.push(atual);
        atual = palavra;
      } else {
        atual = atual ? atual + " " + palavra : palavra;
      }
    });
    if (atual) linhas.push(atual);
    return linhas;
  }

  function desenhar(tela, g) {
    var unidade = g.unidade ? " " + g.unidade : "";
    var escalaDoValor = {
      beginAtZero: true,
      stacked: g.empilhado,
      ticks: { precision: 0, callback: function (v) { return numero.format(v) + unidade; } },
    };
    // Horizontal labels, as many as fit: the week has 168 hours.
    var escalaDosRotulos = {
      stacked: g.empilhado,
      ticks: { autoSkip: true, autoSkipPadding: 16, maxRotation: 0 },
    };
    new window.Chart(tela, {
      type: "bar",
      data: {
        labels: g.rotulos.map(quebrar),
        datasets: g.series.map(function (s) {
          return { label: s.nome, data: s.valores, backgroundColor: s.cor,
                   borderColor: s.cor, maxBarThickness: 32 };
        }),
      },
      options: {
        indexAxis: g.deitado ? "y" : "x",
        // A bar leads to the filtered list behind it (g.links).
        onClick: function (evento, elementos) {
          var link = elementos.length && g.links ? g.links[elementos[0].index] : "";
          if (link) window.location.href = link;
        },
        onHover: function (evento, elementos) {
          var link = elementos.length && g.links ? g.links[elementos[0].index] : "";
          evento.native.target.style.cursor = link ? "pointer" : "";
        },
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: {
          legend: { display: g.series.length > 1 },
          tooltip: { callbacks: { label: function (c) {
            var valor = g.deitado ? c.parsed.x : c.parsed.y;
            return c.dataset.label + ": " + numero.format(valor) + unidade;
          } } },
        },
        scales: g.deitado
          ? { x: escalaDoValor, y: escalaDosRotulos }
          : { x: escalaDosRotulos, y: escalaDoValor },
      },
    });
    tela.closest("figure").classList.add("desenhado");
  }

  var dados = document.getElementById("dados-do-painel");
  if (!dados || typeof window.Chart === "undefined") return;
  var graficos = JSON.parse(dados.textContent);
  var telas = document.querySelectorAll("canvas[data-grafico-do-painel]");
  Array.prototype.forEach.call(telas, function (tela) {
    var g = graficos[tela.dataset.graficoDoPainel];
    if (g) desenhar(tela, g);
  });
})();
