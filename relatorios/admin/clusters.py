"""Support's read-only list of qclusters (relatorio_clusters): which are
alive, which stopped, which a peer declared dead, and when each last beat
and ran its checker. Rows are written only by `relatorios.clusters`."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.utils import timezone

from relatorios.admin.comum import SomenteLeitura, curto
from relatorios.models import Cluster


@admin.register(Cluster)
class ClusterAdmin(SomenteLeitura, admin.ModelAdmin):
    list_display = (
        "id",
        "host",
        "pid",
        "versao",
        "iniciado_em",
        "desde_o_batimento",
        "desde_o_verificador",
        "estado",
    )
    list_filter = ("host", "versao")
    search_fields = ("host", "=pid")
    ordering = ("-batimento_em",)
    show_facets = admin.ShowFacets.NEVER
    fields = (
        ("host", "pid", "versao"),
        "estado",
        "iniciado_em",
        ("batimento_em", "desde_o_batimento"),
        ("verificador_em", "desde_o_verificador"),
        "encerrado_em",
        "morto_em",
    )
    readonly_fields = ("estado", "desde_o_batimento", "desde_o_verificador")

    @admin.display(description="batimento", ordering="batimento_em")
    def desde_o_batimento(self, cluster: Cluster) -> str:
        return f"há {curto(timezone.now() - cluster.batimento_em)}"

    @admin.display(description="verificador", ordering="verificador_em")
    def desde_o_verificador(self, cluster: Cluster) -> str:
        if cluster.verificador_em is None:
            return "—"
        return f"há {curto(timezone.now() - cluster.verificador_em)}"

    @admin.display(description="estado")
    def estado(self, cluster: Cluster) -> str:
        return estado(cluster)


def estado(cluster: Cluster) -> str:
    """vivo, encerrado (graceful stop), morto (declared by a peer), or
    silencioso: not beating for the orphan timeout, not declared yet."""
    if cluster.encerrado_em is not None:
        return "encerrado"
    if cluster.morto_em is not None:
        return "morto"
    silencio = (timezone.now() - cluster.batimento_em).total_seconds()
    return "silencioso" if silencio > settings.RELATORIOS_ORFAO_APOS_S else "vivo"
