// Live regions of the managers' pages (the painel's alert badge and recent
// jobs, the schedules list): they follow the tenant's event stream
// (/relatorios/eventos, the session's cookie) without a reload. On an event
// the page asks the server for itself again and swaps in each
// [data-ao-vivo] region as the server renders it now, so the rules stay the
// server's; a region holding the focus (a form being used) waits for the
// next event. Without EventSource, or if the stream is refused, a refresh
// every minute. Nothing inline: the pages' CSP holds.
(function () {
  "use strict";

  var TIPOS = ["job.pendente", "job.executando", "job.pronto", "job.falhou",
               "alerta.aberto", "alerta.fechado", "message"];
  var PERIODO_MS = 60000;
  var raiz = document.querySelector("[data-eventos-do-tenant]");
  if (!raiz || !window.fetch || !window.DOMParser) return;
  var espera = null;
  var emCurso = false;
  var deNovo = false;

  function comConfirmacao(regiao) {
    // The schedules' "Excluir" asks first (data-confirmar), in swapped-in rows too.
    var formularios = regiao.querySelectorAll("form[data-confirmar]");
    Array.prototype.forEach.call(formularios, function (form) {
      form.addEventListener("submit", function (evento) {
        if (!window.confirm(form.getAttribute("data-confirmar"))) evento.preventDefault();
      });
    });
  }

  function trocar() {
    if (emCurso) { deNovo = true; return; }
    emCurso = true;
    fetch(window.location.href, {
      credentials: "same-origin",
      headers: { "X-Requested-With": "fetch" },
    }).then(function (resposta) {
      if (!resposta.ok) throw new Error("ao vivo " + resposta.status);
      return resposta.text();
    }).then(function (html) {
      var novo = new DOMParser().parseFromString(html, "text/html");
      var regioes = document.querySelectorAll("[data-ao-vivo]");
      Array.prototype.forEach.call(regioes, function (velha) {
        if (velha.contains(document.activeElement)) return;
        var nome = velha.getAttribute("data-ao-vivo");
        var nova = novo.querySelector('[data-ao-vivo="' + nome + '"]');
        if (!nova) return;
        nova = document.importNode(nova, true);
        velha.replaceWith(nova);
        comConfirmacao(nova);
      });
      document.dispatchEvent(new CustomEvent("ao-vivo:atualizado"));
    }).catch(function () {
      // The next event or the next minute tries again.
    }).then(function () {
      emCurso = false;
      if (deNovo) { deNovo = false; agendar(); }
    });
  }

  function agendar() {
    window.clearTimeout(espera);
    espera = window.setTimeout(trocar, 300);
  }

  if (window.EventSource) {
    var fonte = new EventSource(raiz.getAttribute("data-eventos-do-tenant"));
    TIPOS.forEach(function (tipo) { fonte.addEventListener(tipo, agendar); });
  }
  window.setInterval(trocar, PERIODO_MS);
})();
