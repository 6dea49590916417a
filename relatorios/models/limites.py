from __future__ import annotations

from django.db import models


class JanelaDaApi(models.Model):
    """How many API requests one user (token) made in the current fixed window.

    One row per user, overwritten when a new window starts, so the table stays
    the size of the user list. UNLOGGED (migration 0011): a counter lost in a
    crash only forgives a minute of requests, and skipping the WAL keeps the
    per-request write cheap.
    """

    usuario_id = models.BigIntegerField(primary_key=True, verbose_name="usuário")
    # floor(epoch / window length), on the database's clock: one clock for
    # every web process on every host.
    janela = models.BigIntegerField()
    pedidos = models.IntegerField()

    class Meta:
        db_table = "relatorio_limites_api"
        verbose_name = "janela de pedidos da API"
        verbose_name_plural = "janelas de pedidos da API"

    def __str__(self) -> str:
        return f"usuário {self.usuario_id}: {self.pedidos} na janela {self.janela}"
