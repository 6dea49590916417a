"""The managers' request form: collects raw values, `pedidos.submeter`
validates them.

Only presence is checked here; dates, periods and stores are checked by the
same normalization as the API, and its errors are shown at the field.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms

from relatorios.agendamentos.agenda import CRON_MAX, NOME_MAX
from relatorios.agendamentos.entrada import (
    AJUDA_DO_CRON,
    CAMPOS_EQUIVALENTES,
    separar_por_virgula,
)
from relatorios.models import FormaDeEntrega, Periodo, Recuperacao
from relatorios.tipos.base import TipoRelatorio


class PedidoForm(forms.Form):
    inicio = forms.CharField(
        label="De", widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
    )
    fim = forms.CharField(
        label="Até", widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
    )
    agrupar = forms.ChoiceField(
        label="Agrupar", choices=[("dia", "por dia"), ("mes", "por mês")]
    )
    lojas = forms.MultipleChoiceField(
        label="Lojas",
        required=False,
        help_text="Nenhuma selecionada: todas as lojas.",
    )
    # About the requester, not the report: never part of params_brutos().
    notificar_email = forms.BooleanField(
        label="Avisar por e-mail quando terminar", required=False
    )

    def __init__(
        self,
        *args: Any,
        tipo: TipoRelatorio,
        lojas: list[tuple[str, str]],
        hoje: date,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("prefix", tipo.tipo)
        inicio, fim = tipo.periodo_sugerido(hoje)
        kwargs.setdefault(
            "initial", {"inicio": inicio.isoformat(), "fim": fim.isoformat()}
        )
        super().__init__(*args, **kwargs)
        self.tipo = tipo
        if not tipo.usa_agrupar:
            del self.fields["agrupar"]
        campo_lojas = self.fields["lojas"]
        assert isinstance(campo_lojas, forms.MultipleChoiceField)
        campo_lojas.choices = [(codigo, f"{codigo} · {nome}") for codigo, nome in lojas]
        campo_lojas.widget.attrs["size"] = str(max(2, min(8, len(lojas))))

    def params_brutos(self) -> dict[str, Any]:
        """The request as the API would receive it."""
        dados = self.cleaned_data
        params: dict[str, Any] = {
            "inicio": dados["inicio"],
            "fim": dados["fim"],
            "lojas": list(dados["lojas"]),
        }
        if "agrupar" in self.fields:
            params["agrupar"] = dados["agrupar"]
        return params


# --- Schedules (/painel/agendamentos/ and the support admin) -----------------------


class AgendamentoForm(forms.Form):
    """What a manager fills in to schedule a report; `agendamentos.criar`
    validates it (the cron, the deadline, the stores) and names the field."""

    nome = forms.CharField(label="Nome", required=False, max_length=NOME_MAX)
    tipo = forms.ChoiceField(label="Relatório")
    periodo = forms.ChoiceField(label="Período", choices=Periodo.choices)
    cron = forms.CharField(
        label="Quando (cron)",
        max_length=CRON_MAX,
        help_text=AJUDA_DO_CRON,
        widget=forms.TextInput(attrs={"placeholder": "0 3 1 * *"}),
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
    )
    entrega = forms.ChoiceField(
        label="Entrega",
        choices=FormaDeEntrega.choices,
        initial=FormaDeEntrega.ANEXO,
        required=False,
    )
    recuperacao = forms.ChoiceField(
        label="Depois de uma parada, rodar",
        choices=Recuperacao.choices,
        initial=Recuperacao.ULTIMA,
    )

    def __init__(
        self,
        *args: Any,
        tipos_disponiveis: list[tuple[str, str]],
        lojas: list[tuple[str, str]],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        campo_tipo = self.fields["tipo"]
        assert isinstance(campo_tipo, forms.ChoiceField)
        campo_tipo.choices = tipos_disponiveis
        campo_lojas = self.fields["lojas"]
        assert isinstance(campo_lojas, forms.MultipleChoiceField)
        campo_lojas.choices = [(codigo, f"{codigo} · {nome}") for codigo, nome in lojas]
        campo_lojas.widget.attrs["size"] = str(max(2, min(8, len(lojas))))

    def argumentos(self) -> dict[str, Any]:
        """Keyword arguments for `agendamentos.criar` (without tenant and user)."""
        dados = self.cleaned_data
        return {
            "nome": dados["nome"],
            "tipo": dados["tipo"],
            "periodo": dados["periodo"],
            "cron": dados["cron"],
            "prazo": dados["prazo_minutos"],
            "agrupar": dados["agrupar"],
            "lojas": list(dados["lojas"]),
            "destinatarios": separar_por_virgula(dados["destinatarios"]),
            "entrega": dados["entrega"] or None,
            "recuperacao": dados["recuperacao"],
        }

    def erro_do_servico(self, campo: str, mensagem: str) -> None:
        """Show an ErroDeParametro at its field (or above the form)."""
        campo = CAMPOS_EQUIVALENTES.get(campo, campo)
        self.add_error(campo if campo in self.fields else None, mensagem)
