// The managers' pages, progressively enhanced: everything works without this.
//
// Job page: follow the job's event stream (EventSource, same origin, the
// session's cookie); each event is the status endpoint's JSON. Update the
// progress bar; when the status changes, or a running job's event says
// more chunks are done than its partial result on the page shows, swap in
// the server-rendered state (table, CSV link, error, button; the partial
// result's table and chart), and stop once the job is finished. When
// the stream is refused or unavailable (no events process, a proxy that
// blocks it, over its cap), poll the JSON status instead, as before: first
// after the server's Retry-After, backing off to 30 s.
// Request forms: disable the button once submitted (no double requests).
// Forms with data-confirmar: ask first (schedules' "Excluir").
// A finished job's chart: drawn from the page's JSON with Chart.js.
// A result's table: sorted by a column on a click of its title.
(function () {
  "use strict";

  var TERMINAIS = ["pronto", "falhou"];
  var MAXIMO_S = 30;
  var FATOR = 1.5;

  function acompanhar(raiz) {
    var status = raiz.dataset.status;
    if (TERMINAIS.indexOf(status) >= 0) return;
    var intervalo = Number(raiz.dataset.retryAfter) || 2;

    function agendar(segundos) {
      window.setTimeout(consultar, segundos * 1000);
    }

    function campo(nome) {
      return raiz.querySelector('[data-campo="' + nome + '"]');
    }

    function trocarEstado() {
      return fetch(raiz.dataset.urlEstado, {
        credentials: "same-origin",
        cache: "no-store",
        headers: { "X-Requested-With": "fetch" },
      }).then(function (resposta) {
        if (!resposta.ok) throw new Error("estado " + resposta.status);
        return resposta.text();
      }).then(function (html) {
        raiz.innerHTML = html;
        desenharGrafico(raiz);
        tornarOrdenavel(raiz);
      });
    }

    // One change at a time, in order: an event arriving while the state is
    // being swapped in waits for it.
    var fila = Promise.resolve();

    // How many chunks the partial result on the page has (0: none drawn).
    function partesDesenhadas() {
      var parcial = campo("parcial");
      return parcial ? Number(parcial.dataset.partes) || 0 : 0;
    }

    function aplicar(corpo) {
      var trocou = corpo.status !== status;
      // A chunk finished since the partial result on the page was drawn: the
      // server renders the new one (table, totals, chart) as it renders the
      // final result, so the event only has to say so.
      var parcial = corpo.resultado_parcial;
      var redesenhar = trocou ||
        Boolean(parcial && parcial.partes.feitas > partesDesenhadas());
      if (!trocou) {
        var barra = campo("barra");
        var texto = campo("progresso");
        if (barra) barra.value = corpo.progresso;
        if (texto) texto.textContent = corpo.progresso + "%";
      }
      var seguir = function () {
        status = corpo.status;
        raiz.dataset.status = status;
      };
      return redesenhar ? trocarEstado().then(seguir) : Promise.resolve(seguir());
    }

    function ouvir() {
      var fonte = new EventSource(raiz.dataset.urlEventos);
      fonte.onmessage = function (evento) {
        var corpo = JSON.parse(evento.data);
        if (TERMINAIS.indexOf(corpo.status) >= 0) fonte.close();
        fila = fila.then(function () { return aplicar(corpo); }).catch(function () {
          // The state could not be swapped in: a reload shows it.
          raiz.dataset.parado = "sim";
        });
      };
      fonte.onerror = function () {
        // CONNECTING: the browser reconnects by itself, with Last-Event-ID.
        // CLOSED: refused (429, 404, a proxy's 502): poll instead.
        if (fonte.readyState === EventSource.CLOSED) agendar(intervalo);
      };
    }

    function consultar() {
      fetch(raiz.dataset.urlStatus, {
        credentials: "same-origin",
        cache: "no-store",
        headers: { Accept: "application/json" },
      }).then(function (resposta) {
        if (resposta.status === 401 || resposta.status === 403 || resposta.status === 404) {
          // Logged out, or the job is gone: a reload shows why.
          raiz.dataset.parado = "sim";
          throw null;
        }
        if (!resposta.ok) throw new Error("status " + resposta.status);
        var retryAfter = Number(resposta.headers.get("Retry-After")) || 0;
        return resposta.json().then(function (corpo) {
          return { corpo: corpo, retryAfter: retryAfter };
        });
      }).then(function (r) {
        var terminou = TERMINAIS.indexOf(r.corpo.status) >= 0;
        intervalo = Math.min(MAXIMO_S, Math.max(intervalo * FATOR, r.retryAfter));
        return aplicar(r.corpo).then(function () {
          if (!terminou) agendar(intervalo);
        });
      }).catch(function (erro) {
        if (erro === null) return;
        // The network or the server failed for a moment: keep trying, slower.
        intervalo = Math.min(MAXIMO_S, intervalo * 2);
        agendar(intervalo);
      });
    }

    if (window.EventSource && raiz.dataset.urlEventos) ouvir();
    else agendar(intervalo);
  }

  function protegerFormularios() {
    var formularios = document.querySelectorAll("form[data-pedido]");
    Array.prototype.forEach.call(formularios, function (form) {
      form.addEventListener("submit", function () {
        var botao = form.querySelector("button[type=submit]");
        if (botao) {
          botao.disabled = true;
          botao.textContent = "Enviando…";
        }
      });
    });
  }

  // Forms that ask before they post (data-confirmar): the question lives in
  // the markup, the handler here, so the pages need no inline script.
  function confirmarFormularios() {
    var formularios = document.querySelectorAll("form[data-confirmar]");
    Array.prototype.forEach.call(formularios, function (form) {
      form.addEventListener("submit", function (evento) {
        if (!window.confirm(form.dataset.confirmar)) evento.preventDefault();
      });
    });
  }

  // The result's chart: its data is JSON in the page (<script
  // type="application/json">, not run), its drawing Chart.js from our own
  // static files. Bars lie down: their labels are names.
  var CORES = ["#0b63ce", "#d9480f", "#2b8a3e", "#862e9c", "#e67700",
               "#0b7285", "#c2255c", "#5c940d", "#868e96"];

  function desenharGrafico(raiz) {
    var dados = raiz.querySelector("#dados-do-grafico");
    var tela = raiz.querySelector("canvas[data-grafico]");
    if (!dados || !tela || typeof window.Chart === "undefined") return;
    var g = JSON.parse(dados.textContent);
    var deitado = g.forma === "bar";
    var numero = new Intl.NumberFormat("pt-BR", g.moeda
      ? { style: "currency", currency: "BRL" } : { maximumFractionDigits: 2 });
    var escalaDoValor = { ticks: { callback: function (v) { return numero.format(v); } } };
    new window.Chart(tela, {
      type: g.forma,
      data: {
        labels: g.rotulos,
        datasets: g.series.map(function (s, i) {
          var cor = CORES[i % CORES.length];
          return { label: s.nome, data: s.valores, borderColor: cor,
                   backgroundColor: cor, spanGaps: true, tension: 0.2 };
        }),
      },
      options: {
        indexAxis: deitado ? "y" : "x",
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: {
          legend: { display: g.series.length > 1 },
          tooltip: { callbacks: { label: function (c) {
            var valor = deitado ? c.parsed.x : c.parsed.y;
            return c.dataset.label + ": " + numero.format(valor);
          } } },
        },
        scales: deitado ? { x: escalaDoValor } : { y: escalaDoValor },
      },
    });
    tela.closest("figure").classList.add("desenhado");
  }

  // A result's table sorted by a column on a click of its title (a button,
  // so the keyboard reaches it): by each cell's data-valor, numbers as
  // numbers; a second click reverses. The totals row (tfoot) stays put.
  function tornarOrdenavel(raiz) {
    var tabelas = raiz.querySelectorAll("table[data-ordenavel]");
    Array.prototype.forEach.call(tabelas, function (tabela) {
      var titulos = tabela.querySelectorAll("thead th");
      Array.prototype.forEach.call(titulos, function (th, indice) {
        var botao = document.createElement("button");
        botao.type = "button";
        botao.className = "ordenar";
        botao.textContent = th.textContent;
        th.textContent = "";
        th.appendChild(botao);
        botao.addEventListener("click", function () {
          var crescente = th.getAttribute("aria-sort") !== "ascending";
          Array.prototype.forEach.call(titulos, function (outro) {
            outro.removeAttribute("aria-sort");
          });
          th.setAttribute("aria-sort", crescente ? "ascending" : "descending");
          ordenar(tabela, indice, th.hasAttribute("data-numerica"), crescente);
        });
      });
    });
  }

  function ordenar(tabela, indice, numerica, crescente) {
    var corpo = tabela.tBodies[0];
    var linhas = Array.prototype.slice.call(corpo.rows).filter(function (tr) {
      return tr.cells.length > indice;
    });
    function chave(tr) {
      var valor = tr.cells[indice].dataset.valor || "";
      if (!numerica) return valor;
      // An empty cell (a change from zero) sorts below every number.
      return valor === "" ? -Infinity : Number(valor);
    }
    linhas.sort(function (a, b) {
      var x = chave(a), y = chave(b);
      var ordem = numerica ? x - y : String(x).localeCompare(String(y), "pt-BR");
      if (ordem !== ordem) ordem = 0;  // NaN
      return crescente ? ordem : -ordem;
    });
    linhas.forEach(function (tr) { corpo.appendChild(tr); });
  }

  var raiz = document.getElementById("job");
  if (raiz) {
    desenharGrafico(raiz);
    tornarOrdenavel(raiz);
    acompanhar(raiz);
  }
  protegerFormularios();
  confirmarFormularios();
})();
