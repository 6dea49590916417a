// The schedule form (the managers' page and support's admin), progressively
// enhanced: its "Pré-visualizar" button works without this. Here the preview
// (the sentence, the next firings and their deadlines) follows the form as
// the frequency, the time or the deadline change: the server renders it
// (data-previa-url), so the page's clock rules are the server's own.
(function () {
  "use strict";

  var CAMPOS = ["tenant", "frequencia", "horario", "dias_da_semana",
                "dia_do_mes", "intervalo", "unidade", "cron", "prazo_minutos",
                "periodo"];
  var caixa, form;
  var espera = null;
  var ultimo = 0;

  function atualizar() {
    var dados = new FormData(form);
    dados.set("_previsualizar", "1");
    var este = ++ultimo;
    fetch(caixa.dataset.previaUrl, {
      method: "POST",
      body: dados,
      credentials: "same-origin",
      headers: { "X-Requested-With": "fetch" },
    }).then(function (resposta) {
      if (!resposta.ok) throw new Error("previa " + resposta.status);
      return resposta.text();
    }).then(function (html) {
      // An older answer arriving late never replaces a newer one.
      if (este === ultimo) caixa.innerHTML = html;
    }).catch(function () {
      // The button still asks the server.
    });
  }

  // The period that fits each frequency, until the manager picks one.
  var PERIODO_DA_FREQUENCIA = { diaria: "ontem", semanal: "semana_anterior",
                                mensal: "mes_anterior" };
  var periodoEscolhido = false;

  function campoDe(nome) {
    var entrada = form.querySelector("[name=" + nome + "]");
    // The page wraps a field in #campo-<name>; the admin in .field-<name>.
    return entrada && (entrada.closest("#campo-" + nome) ||
                       entrada.closest(".field-" + nome) ||
                       entrada.closest(".form-row"));
  }

  function ajustar(evento) {
    var nome = evento ? evento.target.name : "";
    if (nome === "periodo") periodoEscolhido = true;
    var periodo = form.querySelector("select[name=periodo]");
    if (nome === "frequencia" && !periodoEscolhido && periodo) {
      var sugerido = PERIODO_DA_FREQUENCIA[evento.target.value];
      if (sugerido) periodo.value = sugerido;
    }
    var tipo = form.querySelector("select[name=tipo]");
    var agrupar = campoDe("agrupar");
    if (tipo && agrupar) {
      var opcao = tipo.options[tipo.selectedIndex];
      agrupar.hidden = !!opcao && opcao.getAttribute("data-usa-agrupar") === "0";
    }
  }

  function mudou(evento) {
    ajustar(evento);
    if (CAMPOS.indexOf(evento.target.name) < 0) return;
    window.clearTimeout(espera);
    espera = window.setTimeout(atualizar, 250);
  }

  function iniciar() {
    caixa = document.querySelector("[data-previa-url]");
    form = caixa && caixa.closest("form");
    if (!form || !window.fetch || !window.FormData) return;
    form.addEventListener("change", mudou);
    form.addEventListener("input", mudou);
    ajustar(null);
    atualizar();
  }

  // The admin loads its form's scripts in <head>; the page's, deferred.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", iniciar);
  } else {
    iniciar();
  }
})();
