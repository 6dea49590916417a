"""The managers' request form: collects raw values, `jobs.pedidos` validates them.

(The schedule form is `agendamentos.entrada.AgendamentoForm`, shared with the
support admin.)

Only presence is checked here; dates, periods and stores are checked by the
same normalization as the API, and its errors are shown at the field.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms

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
