"""The schedule form, one for the managers' pages and support's admin.

`paginas.agendamentos` shows it with the tenant's stores as a list;
`admin.agendamentos` adds the tenant and takes stores as text. Either way
the frequency picker writes a cron (the API keeps taking `cron` itself),
`criar` hands `agenda.criar` the same arguments as the API, and the
service's errors are shown at their field.

A preview (the `_previsualizar` button, or the pages' script) computes the
next firings and their deadlines on the tenant's clock, and never saves:
`is_valid()` is False for it, so the admin renders the form again too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django import forms
from django.db import models
from django.utils.dates import WEEKDAYS

from relatorios import tipos
from relatorios.agendamentos import agenda
from relatorios.agendamentos.agenda import CRON_MAX, NOME_MAX, PRAZO_MAX
from relatorios.banco.comum import agora_do_banco
from relatorios.models import (
    Agendamento,
    FormaDeEntrega,
    Periodo,
    PularEntrega,
    Recuperacao,
    Tenant,
)
from relatorios.models.cron import descrever, no_fuso
from relatorios.models.frases_de_cron import MESES
from relatorios.tipos.normalizacao import ErroDeParametro

AJUDA_DO_CRON = (
    "Cinco campos: minuto hora dia-do-mês mês dia-da-semana, no fuso da sua "
    "empresa. Exemplos: «0 3 1 * *» todo dia 1 às 03:00; «30 6 * * 1» toda "
    "segunda às 06:30; «0 7 * * *» todo dia às 07:00."
)

# The name of the preview button (and of the field the pages' script sends).
PREVISUALIZAR = "_previsualizar"

# Errors of the service on fields a form does not have, shown where the
# person can fix them: a period too long for the type is the period's fault.
CAMPOS_EQUIVALENTES = {"inicio": "periodo", "fim": "periodo", "prazo": "prazo_minutos"}


class Frequencia(models.TextChoices):
    """The picker's choices; the last one is the cron itself."""

    DIARIA = "diaria", "todo dia"
    SEMANAL = "semanal", "toda semana, nos dias escolhidos"
    MENSAL = "mensal", "todo mês, num dia"
    INTERVALO = "intervalo", "a cada N minutos ou horas"
    CRON = "cron", "avançado: cron"


class Unidade(models.TextChoices):
    MINUTOS = "minutos", "minutos"
    HORAS = "horas", "horas"


# Cron numbers the days from Sunday (0); the picker lists them from Monday,
# named by Django's own translations.
DIAS_DA_SEMANA = [(str((dia + 1) % 7), WEEKDAYS[dia]) for dia in range(7)]
# croniter reads "L" in the day-of-month field as the month's last day.
# Five-field Vixie cron has no such thing, and no other cron says "the 28th
# to the 31st, whichever is last" ("28-31" fires up to four times), so the
# picker writes it: the schedule's cron is only ever evaluated by croniter.
ULTIMO_DIA = "L"
DIAS_DO_MES = [(str(dia), str(dia)) for dia in range(1, 32)] + [
    (ULTIMO_DIA, "último dia do mês")
]
# The picker's fields, and the ones each frequency uses.
CAMPOS_DO_SELETOR = (
    "frequencia",
    "horario",
    "dias_da_semana",
    "dia_do_mes",
    "intervalo",
    "unidade",
    "cron",
)


def cron_do_seletor(
    frequencia: str, horario: time, dias_da_semana: list[str], dia_do_mes: str
) -> str:
    """The cron a picker choice means (daily, weekly or monthly at HH:MM)."""
    quando = f"{horario.minute} {horario.hour}"
    if frequencia == Frequencia.DIARIA:
        return f"{quando} * * *"
    if frequencia == Frequencia.SEMANAL:
        return f"{quando} * * {em_faixas(sorted({int(d) for d in dias_da_semana}))}"
    if frequencia == Frequencia.MENSAL:
        return f"{quando} {dia_do_mes} * *"
    raise ValueError(f"not a picker frequency: {frequencia}")


def periodo_em_palavras(inicio: date, fim: date) -> str:
    """'novembro de 2026', '06/12/2026', '2026', '30/11/2026 a 06/12/2026':
    the period a firing reports on, as the preview says it."""
    if inicio == fim:
        return f"{inicio:%d/%m/%Y}"
    if (inicio.month, inicio.day, fim.month, fim.day) == (1, 1, 12, 31) and (
        inicio.year == fim.year
    ):
        return str(inicio.year)
    proximo = fim + timedelta(days=1)
    if (
        inicio.day == 1
        and proximo.day == 1
        and (inicio.year, inicio.month)
        == (
            fim.year,
            fim.month,
        )
    ):
        return f"{MESES[inicio.month]} de {inicio.year}"
    return f"{inicio:%d/%m/%Y} a {fim:%d/%m/%Y}"


def em_faixas(numeros: list[int]) -> str:
    """'1-5' for 1,2,3,4,5 and '1,3,5' for 1,3,5: a run of three or more
    sorted numbers as a range, as people write a cron."""
    partes: list[str] = []
    inicio = 0
    for i in range(1, len(numeros) + 1):
        if i < len(numeros) and numeros[i] == numeros[i - 1] + 1:
            continue
        faixa = numeros[inicio:i]
        if len(faixa) >= 3:
            partes.append(f"{faixa[0]}-{faixa[-1]}")
        else:
            partes.extend(str(n) for n in faixa)
        inicio = i
    return ",".join(partes)


def separar_por_virgula(texto: str) -> list[str]:
    """ "a@x.com, b@y.com" -> ["a@x.com", "b@y.com"] (blank items dropped)."""
    return [item.strip() for item in texto.replace(";", ",").split(",") if item.strip()]


@dataclass(frozen=True)
class Previa:
    """What a schedule will do, before it is saved: the sentence, and the next
    firings with their deadlines, on the tenant's clock."""

    descricao: str
    # (firing, deadline), "dd/mm/aaaa HH:MM"; no deadline while it is invalid.
    disparos: list[tuple[str, str | None]]
    # The period each firing reports on ("novembro de 2026"); empty without
    # a valid period.
    periodos: list[str] = field(default_factory=list)

    @property
    def linhas(self) -> list[tuple[str, str | None, str]]:
        periodos = self.periodos or [""] * len(self.disparos)
        return [(d, p, q) for (d, p), q in zip(self.disparos, periodos, strict=True)]


class SelectDeTipo(forms.Select):
    """The report types, each option saying whether the type groups by day or
    month (`data-usa-agrupar`): agendamento.js hides "Agrupar" for the
    others, as a field that does not apply."""

    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        opcao = super().create_option(*args, **kwargs)
        tipo = tipos.registro().get(str(opcao["value"]))
        if tipo is not None:
            opcao["attrs"]["data-usa-agrupar"] = "1" if tipo.usa_agrupar else "0"
        return opcao


class AgendamentoForm(forms.Form):
    """What a manager (or support, for a tenant) fills in to schedule a report;
    `agenda.criar` validates it (the cron, the deadline, the stores) and
    names the field."""

    nome = forms.CharField(label="Nome", required=False, max_length=NOME_MAX)
    tipo = forms.ChoiceField(
        label="Relatório",
        choices=lambda: [(t.tipo, t.titulo) for t in tipos.registro().values()],
        widget=SelectDeTipo,
    )
    # The picker starts on "todo mês": the period that fits it.
    periodo = forms.ChoiceField(
        label="Período", choices=Periodo.choices, initial=Periodo.MES_ANTERIOR
    )
    frequencia = forms.ChoiceField(
        label="Quando",
        choices=Frequencia.choices,
        initial=Frequencia.MENSAL,
        widget=forms.RadioSelect,
        help_text="No fuso da sua empresa. Depois de criado, o agendamento não "
        "muda: para trocar quando ele roda, exclua-o e crie outro.",
    )
    horario = forms.TimeField(
        label="Horário",
        required=False,
        initial="03:00",
        widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
    )
    dias_da_semana = forms.MultipleChoiceField(
        label="Dias da semana",
        required=False,
        choices=DIAS_DA_SEMANA,
        widget=forms.CheckboxSelectMultiple,
    )
    dia_do_mes = forms.ChoiceField(
        label="Dia do mês",
        required=False,
        choices=DIAS_DO_MES,
        initial="1",
        help_text="Num mês sem esse dia (29, 30 ou 31) não há disparo; para o "
        "fim de todo mês, escolha «último dia do mês».",
    )
    intervalo = forms.IntegerField(
        label="A cada",
        required=False,
        min_value=1,
        max_value=59,
        initial=30,
        help_text="Minutos que dividem a hora (15, 20, 30) ou horas que "
        "dividem o dia (1, 2, 3, 4, 6, 8, 12), contados da meia-noite.",
    )
    unidade = forms.ChoiceField(
        label="Unidade",
        required=False,
        choices=Unidade.choices,
        initial=Unidade.MINUTOS,
    )
    cron = forms.CharField(
        label="Cron",
        required=False,
        max_length=CRON_MAX,
        help_text=AJUDA_DO_CRON,
        widget=forms.TextInput(attrs={"placeholder": "0 3 1 * *", "size": 30}),
    )
    prazo_minutos = forms.IntegerField(
        label="Prazo (minutos)",
        initial=180,
        help_text="Quanto tempo depois do disparo o relatório deve estar pronto; "
        "se não estiver, abre-se um alerta.",
    )
    agrupar = forms.ChoiceField(
        label="Agrupar", choices=[("dia", "por dia"), ("mes", "por mês")]
    )
    lojas = forms.MultipleChoiceField(
        label="Lojas", required=False, help_text="Nenhuma selecionada: todas as lojas."
    )
    destinatarios = forms.CharField(
        label="Destinatários",
        required=False,
        help_text="E-mails separados por vírgula. Cada um recebe o relatório "
        "quando fica pronto, e os alertas.",
        widget=forms.TextInput(attrs={"size": 60}),
    )
    entrega = forms.ChoiceField(
        label="Entrega",
        choices=FormaDeEntrega.choices,
        initial=FormaDeEntrega.ANEXO,
        required=False,
    )
    pular = forms.ChoiceField(
        label="Não enviar",
        choices=PularEntrega.choices,
        initial=PularEntrega.NUNCA,
        required=False,
        help_text="Um relatório pulado conta como entregue no prazo.",
    )
    recuperacao = forms.ChoiceField(
        label="Depois de uma parada, rodar",
        choices=Recuperacao.choices,
        initial=Recuperacao.ULTIMA,
    )

    def __init__(
        self,
        *args: Any,
        lojas: list[tuple[str, str]] | None,
        fuso: str | None = None,
        previsualizar: bool = False,
        **kwargs: Any,
    ) -> None:
        """`lojas`: the tenant's stores to choose from, or None for codes typed
        comma-separated; `fuso`: the tenant's zone (the preview's clock)."""
        super().__init__(*args, **kwargs)
        self.fuso = fuso
        self.previsualizando = previsualizar or PREVISUALIZAR in self.data
        self.previa: Previa | None = None
        if lojas is None:
            self.fields["lojas"] = forms.CharField(
                label="Lojas",
                required=False,
                help_text="Códigos separados por vírgula (L001, L002); vazio: todas.",
            )
        else:
            campo_lojas = self.fields["lojas"]
            assert isinstance(campo_lojas, forms.MultipleChoiceField)
            campo_lojas.choices = [
                (codigo, f"{codigo} · {nome}") for codigo, nome in lojas
            ]
            campo_lojas.widget.attrs["size"] = str(max(2, min(8, len(lojas))))

    def is_valid(self) -> bool:
        # A preview is a round trip that never saves: the page (or the admin's
        # add view) renders the bound form again, with its preview.
        return super().is_valid() and not self.previsualizando

    def clean(self) -> dict[str, Any]:
        dados = super().clean() or {}
        cron = self._cron(dados)
        if cron is None:
            dados.pop("cron", None)
            return dados
        dados["cron"] = cron
        fuso = self.fuso_da_previa()
        if self.previsualizando and fuso is not None:
            self.previa = self._previa(
                cron, fuso, dados.get("prazo_minutos"), dados.get("periodo")
            )
        return dados

    def fuso_da_previa(self) -> str | None:
        """The zone the preview is computed on (the admin's: its tenant's)."""
        return self.fuso

    def argumentos(self) -> dict[str, Any]:
        """Keyword arguments for `agenda.criar` (without tenant and user)."""
        dados = self.cleaned_data
        lojas = dados["lojas"]
        return {
            "nome": dados["nome"],
            "tipo": dados["tipo"],
            "periodo": dados["periodo"],
            "cron": dados["cron"],
            "prazo": dados["prazo_minutos"],
            "agrupar": dados["agrupar"],
            "lojas": separar_por_virgula(lojas)
            if isinstance(lojas, str)
            else list(lojas),
            "destinatarios": separar_por_virgula(dados["destinatarios"]),
            "entrega": dados["entrega"] or None,
            "pular": dados["pular"] or None,
            "recuperacao": dados["recuperacao"],
        }

    def criar(self, *, tenant_id: int, usuario_id: int | None) -> Agendamento | None:
        """Create the schedule through `agenda.criar`; None, with the error at
        its field, if the service refused it. LimiteDoTenant is the caller's
        (the pages answer 409, the admin shows it above the form)."""
        try:
            return agenda.criar(
                tenant_id=tenant_id, usuario_id=usuario_id, **self.argumentos()
            )
        except ErroDeParametro as erro:
            self.erro_do_servico(erro.campo, erro.mensagem)
            return None

    def erro_do_servico(self, campo: str, mensagem: str) -> None:
        """Show an ErroDeParametro at its field (or above the form). A cron the
        picker wrote is the picker's: its cron field is not in view."""
        campo = CAMPOS_EQUIVALENTES.get(campo, campo)
        if campo == "cron" and self.cleaned_data.get("frequencia") != Frequencia.CRON:
            campo = "frequencia"
        self.add_error(campo if campo in self.fields else None, mensagem)

    def erros_da_previa(self) -> list[str]:
        """What keeps the preview from showing: the picker's and the deadline's
        errors."""
        return [
            str(mensagem)
            for campo in (*CAMPOS_DO_SELETOR, "prazo_minutos")
            for mensagem in self.errors.get(campo, [])
        ]

    def _cron(self, dados: dict[str, Any]) -> str | None:
        """The cron the picker means, or None with the error at its field."""
        frequencia = dados.get("frequencia")
        if frequencia is None:
            return None
        if frequencia == Frequencia.CRON:
            if not dados.get("cron"):
                if "cron" not in self.errors:
                    self.add_error("cron", "informe a expressão cron")
                return None
            return str(dados["cron"])
        if frequencia == Frequencia.INTERVALO:
            return self._cron_do_intervalo(dados)
        horario = dados.get("horario")
        if horario is None:
            if "horario" not in self.errors:
                self.add_error("horario", "informe o horário (HH:MM)")
            return None
        if horario.second or horario.microsecond:
            self.add_error("horario", "informe só horas e minutos (HH:MM)")
            return None
        dias = dados.get("dias_da_semana") or []
        if frequencia == Frequencia.SEMANAL and not dias:
            self.add_error("dias_da_semana", "escolha pelo menos um dia da semana")
            return None
        dia = dados.get("dia_do_mes")
        if frequencia == Frequencia.MENSAL and not dia:
            if "dia_do_mes" not in self.errors:
                self.add_error("dia_do_mes", "escolha o dia do mês")
            return None
        return cron_do_seletor(frequencia, horario, dias, dia or "")

    def _cron_do_intervalo(self, dados: dict[str, Any]) -> str | None:
        """'*/15 * * * *' or '0 */2 * * *': every N minutes or hours, from
        midnight, N dividing the hour or the day so the gaps are equal."""
        n = dados.get("intervalo")
        if n is None:
            if "intervalo" not in self.errors:
                self.add_error("intervalo", "informe de quanto em quanto tempo")
            return None
        if dados.get("unidade") == Unidade.HORAS:
            if 24 % n or n > 12:
                self.add_error(
                    "intervalo",
                    "escolha horas que dividem o dia: 1, 2, 3, 4, 6, 8 ou 12",
                )
                return None
            return "0 * * * *" if n == 1 else f"0 */{n} * * *"
        if 60 % n:
            self.add_error(
                "intervalo", "escolha minutos que dividem a hora: 15, 20 ou 30"
            )
            return None
        return f"*/{n} * * * *"

    def _previa(
        self, cron: str, fuso: str, minutos: Any, periodo: str | None = None
    ) -> Previa | None:
        """The next three firings of `cron` and their deadlines, checked as
        `agenda.criar` will check them (errors at their field)."""
        agora = agora_do_banco()
        try:
            cron = agenda.validar_cron(cron)
            primeiro = agenda.proximo_disparo(cron, fuso, agora)
            agenda.verificar_intervalo(cron, fuso, agora)
        except ErroDeParametro as erro:
            self.erro_do_servico(erro.campo, erro.mensagem)
            return None
        # Walked as a stored schedule's are (agenda.proximos_disparos).
        modelo = Agendamento(
            cron=cron,
            ativo=True,
            proximo_disparo=primeiro,
            tenant=Tenant(fuso_horario=fuso),
        )
        prazo = (
            timedelta(minutes=minutos)
            if isinstance(minutos, int)
            and 0 < minutos <= PRAZO_MAX.total_seconds() // 60
            else None
        )
        disparos = agenda.proximos_disparos(modelo, 3)
        return Previa(
            descricao=descrever(cron, fuso, primeiro),
            disparos=[
                (
                    no_fuso(disparo, fuso),
                    no_fuso(disparo + prazo, fuso) if prazo else None,
                )
                for disparo in disparos
            ],
            periodos=[
                periodo_em_palavras(
                    *agenda.periodo_concreto(
                        periodo, disparo.astimezone(ZoneInfo(fuso)).date()
                    )
                )
                for disparo in disparos
            ]
            if periodo in Periodo.values
            else [],
        )
